/*
 * volumeattachment.c - the VolumeAttachment kind (storage.k8s.io/v1): the
 * intent to attach a volume to a node, and (status) whether it is.
 *
 * Mirrors Kubernetes' pkg/registry/storage/volumeattachment/strategy.go,
 * ValidateVolumeAttachment(V1, Update) in pkg/apis/storage/validation and
 * printVolumeAttachment: cluster-scoped, status through its subresource (a
 * write of the main resource keeps the stored status, a status write the
 * stored spec). The attacher is a CSI driver name; the source names exactly
 * one of persistentVolumeName (non-empty, a DNS subdomain) and
 * inlineVolumeSpec; nodeName is a DNS subdomain. Status: attachmentMetadata
 * at most 256 KiB, an error message at most 1024 bytes (Kubernetes reports
 * the metadata limit in that message too). The spec never changes. Columns:
 * NAME, ATTACHER, PV, NODE, ATTACHED, AGE. An inline volume spec is not
 * validated further here (Kubernetes validates it as a PersistentVolume's).
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_storage.c and tests/e2e/test_kinds.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"

#define METADATA_MAX      (256 * 1024)
#define ERROR_MESSAGE_MAX 1024

static void validate_subdomain(const char *value, const char *path, struct ck_field_errors *errs)
{
    struct ck_field_errors local = {0};
    ck_validate_dns1123_subdomain(value, path, &local);
    for (size_t i = 0; i < local.len; i++)
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, value, true, "%s",
                            local.items[i].detail ? local.items[i].detail : "");
    ck_field_errors_release(&local);
}

static void validate_error(const json_t *e, const char *path, struct ck_field_errors *errs)
{
    const char *msg = ck__str_at(e, "message");
    if (msg && strlen(msg) > ERROR_MESSAGE_MAX) {
        char f[64];
        snprintf(f, sizeof(f), "%s.message", path);
        ck_field_errors_add(errs, CK_FIELD_TOO_LONG, f, NULL, false,
                            "may not be more than %d bytes", METADATA_MAX);
    }
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    const json_t *spec = json_object_get(obj, "spec");
    const char *attacher = ck__str_at(spec, "attacher");
    if (!attacher || !*attacher)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.attacher", NULL, false, NULL);
    const json_t *source = json_object_get(spec, "source");
    const json_t *pv = json_object_get(source, "persistentVolumeName");
    const json_t *inline_spec = json_object_get(source, "inlineVolumeSpec");
    static const char one[] = "must specify exactly one of inlineVolumeSpec and "
                              "persistentVolumeName";
    if (!pv && !inline_spec)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.source", NULL, false, one);
    else if (pv && inline_spec)
        ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "spec.source", NULL, false, one);
    else if (pv && !*(json_string_value(pv) ? json_string_value(pv) : ""))
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.source.persistentVolumeName", NULL,
                            false, "must specify non empty persistentVolumeName");
    const char *node = ck__str_at(spec, "nodeName");
    validate_subdomain(node ? node : "", "spec.nodeName", errs);
    const json_t *status = json_object_get(obj, "status");
    size_t size = 0;
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)json_object_get(status, "attachmentMetadata"), k, v)
    {
        size += strlen(k) + (json_string_value(v) ? strlen(json_string_value(v)) : 0);
    }
    if (size > METADATA_MAX)
        ck_field_errors_add(errs, CK_FIELD_TOO_LONG, "status.attachmentMetadata", NULL, false,
                            "may not be more than %d bytes", METADATA_MAX);
    validate_error(json_object_get(status, "attachError"), "status.attachError", errs);
    validate_error(json_object_get(status, "detachError"), "status.detachError", errs);
    /* ValidateVolumeAttachmentV1: the attacher is a CSI driver's name. */
    if (attacher && *attacher)
        ck__validate_csi_driver_name(attacher, "spec.attacher", errs);
    if (json_is_string(pv) && *json_string_value(pv))
        validate_subdomain(json_string_value(pv), "spec.source.persistentVolumeName", errs);
    if (!old)
        return;
    const json_t *was = json_object_get(old, "spec");
    if (!json_equal(was ? was : json_null(), spec ? spec : json_null())) {
        char *text = spec ? json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec", text ? text : "null", false,
                            "field is immutable");
        free(text);
    }
}

enum {
    COL_NAME,
    COL_ATTACHER,
    COL_PV,
    COL_NODE,
    COL_ATTACHED,
    COL_AGE,
};

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    cells[COL_ATTACHED] = json_boolean(json_is_true(ck__json_path(obj, "status.attached")));
}

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_ATTACHER] = {"Attacher", "string", "",
                      "attacher indicates the name of the volume driver that MUST handle this "
                      "request. This is the name returned by GetPluginName().",
                      0, ".spec.attacher", CK_CELL_ABSENT_EMPTY, false},
    [COL_PV] = {"PV", "string", "",
                "persistentVolumeName represents the name of the persistent volume to attach.", 0,
                ".spec.source.persistentVolumeName", CK_CELL_ABSENT_EMPTY, false},
    [COL_NODE] = {"Node", "string", "",
                  "nodeName represents the node that the volume should be "
                  "attached to.",
                  0, ".spec.nodeName", CK_CELL_ABSENT_EMPTY, false},
    [COL_ATTACHED] = CK__COMPUTED_COLUMN(
        "Attached", "boolean",
        "attached indicates the volume is successfully attached. This field must only be set by "
        "the entity completing the attach operation, i.e. the external-attacher.",
        0),
    [COL_AGE] = CK__AGE_COLUMN,
};

const struct ck_kind ck__kind_volumeattachment = {
    .group = "storage.k8s.io",
    .version = "v1",
    .kind = "VolumeAttachment",
    .list_kind = "VolumeAttachmentList",
    .resource = "volumeattachments",
    .singular = "volumeattachment",
    .namespaced = false,
    .schema = "io.k8s.api.storage.v1.VolumeAttachment",
    CK__KIND_SUBRESOURCES(ck__status_subresource),
    .status_keeps_metadata = ck__status_keeps_labels,
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .validate = validate,
};
