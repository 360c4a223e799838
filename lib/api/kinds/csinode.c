/*
 * csinode.c - the CSINode kind (storage.k8s.io/v1): the CSI drivers
 * installed on one node, named as the node.
 *
 * Mirrors Kubernetes' pkg/registry/storage/csinode/strategy.go,
 * ValidateCSINode(Update) in pkg/apis/storage/validation and printCSINode:
 * cluster-scoped, no status. Each driver has a CSI driver name (unique in
 * the list), a nodeID of at most 192 characters, a non-negative
 * allocatable.count and topology keys that are unique qualified names; a
 * driver already listed never changes (drivers may be added or removed).
 * Columns: NAME, DRIVERS (how many), AGE.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_storage.c and tests/e2e/test_kinds.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"

#define NODE_ID_MAX 192

static void validate_driver(const json_t *drivers, size_t i, struct ck_field_errors *errs)
{
    const json_t *d = json_array_get(drivers, i);
    const char *name = ck__str_at(d, "name");
    char path[96];
    snprintf(path, sizeof(path), "spec.drivers[%zu].name", i);
    ck__validate_csi_driver_name(name, path, errs);
    const char *id = ck__str_at(d, "nodeID");
    snprintf(path, sizeof(path), "spec.drivers[%zu].nodeID", i);
    if (!id || !*id)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, path, NULL, false, NULL);
    else if (strlen(id) > NODE_ID_MAX)
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, id, true, "must be %d characters or less",
                            NODE_ID_MAX);
    const json_t *count = ck__json_path(d, "allocatable.count");
    if (json_is_integer(count) && json_integer_value(count) < 0) {
        char value[32];
        snprintf(value, sizeof(value), "%lld", (long long)json_integer_value(count));
        snprintf(path, sizeof(path), "spec.drivers[%zu].allocatable.count", i);
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, value, false,
                            "must be greater than or equal to 0");
    }
    for (size_t j = 0; j < i; j++) {
        const char *before = ck__str_at(json_array_get(drivers, j), "name");
        if (name && before && strcmp(name, before) == 0) {
            snprintf(path, sizeof(path), "spec.drivers[%zu].name", i);
            ck_field_errors_add(errs, CK_FIELD_DUPLICATE, path, name, true, NULL);
            break;
        }
    }
    snprintf(path, sizeof(path), "spec.drivers[%zu]", i);
    const json_t *keys = json_object_get(d, "topologyKeys");
    size_t k;
    const json_t *key;
    json_array_foreach(keys, k, key)
    {
        const char *s = json_string_value(key);
        if (!s || !*s)
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, path, NULL, false, NULL);
        for (size_t j = 0; j < k && s; j++) {
            const char *before = json_string_value(json_array_get(keys, j));
            if (before && strcmp(before, s) == 0) {
                ck_field_errors_add(errs, CK_FIELD_DUPLICATE, path, s, true, NULL);
                break;
            }
        }
        ck_validate_qualified_name(s ? s : "", path, errs);
    }
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    const json_t *drivers = ck__json_path(obj, "spec.drivers");
    for (size_t i = 0; i < json_array_size(drivers); i++)
        validate_driver(drivers, i, errs);
    if (!old)
        return;
    size_t i, j;
    const json_t *was, *now;
    json_array_foreach(ck__json_path(old, "spec.drivers"), i, was)
    {
        json_array_foreach(drivers, j, now)
        {
            const char *a = ck__str_at(was, "name"), *b = ck__str_at(now, "name");
            if (!a || !b || strcmp(a, b) != 0 || json_equal(was, now))
                continue;
            char *text = json_dumps(now, JSON_COMPACT | JSON_SORT_KEYS);
            ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.drivers", text ? text : "", false,
                                "field is immutable");
            free(text);
        }
    }
}

enum {
    COL_NAME,
    COL_DRIVERS,
    COL_AGE,
};

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    cells[COL_DRIVERS] =
        json_integer((json_int_t)json_array_size(ck__json_path(obj, "spec.drivers")));
}

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_DRIVERS] = CK__COMPUTED_COLUMN(
        "Drivers", "integer",
        "drivers is a list of information of all CSI Drivers existing on a node. If all drivers "
        "in the list are uninstalled, this can become empty.",
        0),
    [COL_AGE] = CK__AGE_COLUMN,
};

const struct ck_kind ck__kind_csinode = {
    .group = "storage.k8s.io",
    .version = "v1",
    .kind = "CSINode",
    .list_kind = "CSINodeList",
    .resource = "csinodes",
    .singular = "csinode",
    .namespaced = false,
    .schema = "io.k8s.api.storage.v1.CSINode",
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .validate = validate,
};
