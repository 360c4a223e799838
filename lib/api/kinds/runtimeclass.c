/*
 * runtimeclass.c - the RuntimeClass kind (node.k8s.io/v1): a name for a
 * container runtime configuration pods may ask for.
 *
 * Mirrors Kubernetes' pkg/registry/node/runtimeclass/strategy.go and
 * pkg/apis/node/validation: cluster-scoped, no status; handler is required,
 * a DNS-1123 label, and never changes; scheduling's node selector keys and
 * values are label keys and values. The printer shows NAME, HANDLER and AGE.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_scheduling.c.
 */
#include <string.h>

#include "../internal.h"

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    const char *handler = ck__str_at(obj, "handler");
    if (!handler || !*handler)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "handler", NULL, false, NULL);
    else
        ck_validate_dns1123_label(handler, "handler", errs);
    const json_t *selector = ck__json_path(obj, "scheduling.nodeSelector");
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)selector, key, value)
    {
        ck_validate_qualified_name(key, "scheduling.nodeSelector", errs);
        if (json_is_string(value))
            ck_validate_label_value(json_string_value(value), "scheduling.nodeSelector", errs);
    }
    if (old) {
        const char *was = ck__str_at(old, "handler");
        if (strcmp(handler ? handler : "", was ? was : "") != 0)
            ck_field_errors_add(errs, CK_FIELD_INVALID, "handler", handler ? handler : "", true,
                                "field is immutable");
    }
}

enum {
    COL_NAME,
    COL_HANDLER,
    COL_AGE,
};

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_HANDLER] = {"Handler", "string", "",
                     "handler specifies the underlying runtime and configuration that the CRI "
                     "implementation will use to handle pods of this class.",
                     0, ".handler", CK_CELL_ABSENT_EMPTY, false},
    [COL_AGE] = CK__AGE_COLUMN,
};

const struct ck_kind ck__kind_runtimeclass = {
    .group = "node.k8s.io",
    .version = "v1",
    .kind = "RuntimeClass",
    .list_kind = "RuntimeClassList",
    .resource = "runtimeclasses",
    .singular = "runtimeclass",
    .namespaced = false,
    .schema = "io.k8s.api.node.v1.RuntimeClass",
    CK__KIND_COLUMNS(columns),
    .validate = validate,
};
