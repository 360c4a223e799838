/*
 * csistoragecapacity.c - the CSIStorageCapacity kind (storage.k8s.io/v1):
 * the capacity a CSI driver reports for one storage class in one topology
 * segment, which the scheduler may weigh.
 *
 * Mirrors Kubernetes' pkg/registry/storage/csistoragecapacity/strategy.go,
 * ValidateCSIStorageCapacity(Update) in pkg/apis/storage/validation and
 * printCSIStorageCapacity: namespaced, no status. nodeTopology is a valid
 * label selector, storageClassName a DNS subdomain, capacity not negative;
 * nodeTopology and storageClassName never change. Columns: NAME,
 * STORAGECLASSNAME, CAPACITY ("<unset>" when absent); Kubernetes prints no
 * age for it.
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

static void immutable(const json_t *obj, const json_t *old, const char *key, bool string,
                      struct ck_field_errors *errs)
{
    const json_t *a = json_object_get(obj, key), *b = json_object_get(old, key);
    if (json_equal(a ? a : json_null(), b ? b : json_null()))
        return;
    char *text =
        string ? NULL
               : json_dumps(a ? a : json_null(), JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    ck_field_errors_add(errs, CK_FIELD_INVALID, key,
                        string ? (json_string_value(a) ? json_string_value(a) : "") : text, string,
                        "field is immutable");
    free(text);
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    const json_t *topology = json_object_get(obj, "nodeTopology");
    if (topology) {
        struct ck_label_selector *sel = NULL;
        struct ck_err err = {0};
        if (ck_label_selector_from_object(topology, &sel, &err) < 0)
            ck_field_errors_add(errs, CK_FIELD_INVALID, "nodeTopology", NULL, false, "%s", err.msg);
        ck_label_selector_free(sel);
    }
    const char *cls = ck__str_at(obj, "storageClassName");
    struct ck_field_errors local = {0};
    ck_validate_dns1123_subdomain(cls ? cls : "", "storageClassName", &local);
    for (size_t i = 0; i < local.len; i++)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "storageClassName", cls ? cls : "", true, "%s",
                            local.items[i].detail ? local.items[i].detail : "");
    ck_field_errors_release(&local);
    const char *capacity = ck__str_at(obj, "capacity");
    int64_t milli = 0;
    if (capacity && ck_quantity_milli(capacity, &milli) == 0 && milli < 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "capacity", capacity, true,
                            "must be greater than or equal to 0");
    if (!old)
        return;
    immutable(obj, old, "nodeTopology", false, errs);
    immutable(obj, old, "storageClassName", true, errs);
}

enum {
    COL_NAME,
    COL_STORAGE_CLASS_NAME,
    COL_CAPACITY,
};

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    const char *capacity = ck__str_at(obj, "capacity");
    cells[COL_CAPACITY] = json_string(capacity ? capacity : "<unset>");
}

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_STORAGE_CLASS_NAME] = {"StorageClassName", "string", "",
                                "storageClassName represents the name of the StorageClass that "
                                "the reported capacity applies to.",
                                0, ".storageClassName", CK_CELL_ABSENT_EMPTY, false},
    [COL_CAPACITY] = CK__COMPUTED_COLUMN(
        "Capacity", "string",
        "capacity is the value reported by the CSI driver in its GetCapacityResponse for a "
        "GetCapacityRequest with topology and parameters that match the previous fields.",
        0),
};

const struct ck_kind ck__kind_csistoragecapacity = {
    .group = "storage.k8s.io",
    .version = "v1",
    .kind = "CSIStorageCapacity",
    .list_kind = "CSIStorageCapacityList",
    .resource = "csistoragecapacities",
    .singular = "csistoragecapacity",
    .namespaced = true,
    .schema = "io.k8s.api.storage.v1.CSIStorageCapacity",
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .validate = validate,
};
