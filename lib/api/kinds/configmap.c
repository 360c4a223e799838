/*
 * configmap.c - the ConfigMap kind (core/v1): configuration for pods, as
 * text (data) and bytes (binaryData, base64).
 *
 * Mirrors Kubernetes' pkg/registry/core/configmap and ValidateConfigMap:
 * keys follow IsConfigMapKey and appear in only one of the two maps, the
 * values total at most 1 MiB, and an immutable ConfigMap keeps its data.
 * kubectl prints NAME, DATA (how many keys, both maps) and AGE; short name cm.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 * Tested by tests/api/test_configdata.c and test_kinds.c, and the kubectl e2e
 * test of the kinds (tests/e2e/test_kubectl_kinds.sh).
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"

enum { COL_NAME, COL_DATA, COL_AGE };

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    const json_t *data = json_object_get(obj, "data");
    const json_t *binary = json_object_get(obj, "binaryData");
    size_t total = ck__config_map_validate_keys(data, "data", false, errs);
    total += ck__config_map_validate_keys(binary, "binaryData", true, errs);
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)binary, key, value)
    {
        if (json_object_get(data, key)) {
            char path[512];
            snprintf(path, sizeof(path), "binaryData[%s]", key);
            ck_field_errors_add(errs, CK_FIELD_INVALID, path, key, true,
                                "duplicate of key present in data");
        }
    }
    if (total > CK__CONFIG_DATA_MAX)
        ck_field_errors_add(errs, CK_FIELD_TOO_LONG, "", NULL, false,
                            "may not be more than %d bytes", CK__CONFIG_DATA_MAX);
    static const char *const frozen[] = {"data", "binaryData", NULL};
    ck__config_immutable_validate(obj, old, frozen, errs);
}

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    cells[COL_DATA] =
        json_integer((json_int_t)(json_object_size(json_object_get(obj, "data")) +
                                  json_object_size(json_object_get(obj, "binaryData"))));
}

static const char *const short_names[] = {"cm", NULL};

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_DATA] = CK__COMPUTED_COLUMN("Data", "string", "How many keys the ConfigMap holds.", 0),
    [COL_AGE] = CK__AGE_COLUMN,
};

const struct ck_kind ck__kind_configmap = {
    .group = "",
    .version = "v1",
    .kind = "ConfigMap",
    .list_kind = "ConfigMapList",
    .resource = "configmaps",
    .singular = "configmap",
    .short_names = short_names,
    .namespaced = true,
    .role = CK_KIND_ROLE_CONFIG_MAP,
    .schema = "io.k8s.api.core.v1.ConfigMap",
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .validate = validate,
};
