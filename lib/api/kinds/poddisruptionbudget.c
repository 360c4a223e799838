/*
 * poddisruptionbudget.c - the PodDisruptionBudget kind (policy/v1): how many
 * of a collection's pods may be evicted at once.
 *
 * Mirrors Kubernetes' pkg/registry/policy/poddisruptionbudget/strategy.go and
 * ValidatePodDisruptionBudgetSpec: the server owns status (kept by the
 * disruption controller; a create starts at zeros); minAvailable and
 * maxUnavailable are exclusive and not negative. kubectl's columns, N/A for
 * the bound not given. pods/eviction reads the status (handlers.c).
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_kinds.c (descriptor) and tests/e2e/test_workloads.sh.
 */
#include <stdio.h>

#include "../internal.h"

enum {
    COL_NAME,
    COL_MIN_AVAILABLE,
    COL_MAX_UNAVAILABLE,
    COL_ALLOWED_DISRUPTIONS,
    COL_AGE,
};

static int prepare_for_create(json_t *obj)
{
    return json_object_set_new(obj, "status", json_object()) < 0 ? CK_ENOMEM : 0;
}

static void validate_bound(const json_t *value, const char *path, struct ck_field_errors *errs)
{
    char text[64];
    if (json_is_integer(value) && json_integer_value(value) < 0) {
        snprintf(text, sizeof(text), "%lld", (long long)json_integer_value(value));
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, text, false,
                            "must be greater than or equal to 0");
    } else if (json_is_string(value)) {
        int percent = -1;
        char rest = 0;
        const char *s = json_string_value(value);
        if (sscanf(s, "%d%%%c", &percent, &rest) != 1 || percent < 0 || percent > 100)
            ck_field_errors_add(errs, CK_FIELD_INVALID, path, s, true,
                                "must be an integer or a percentage between 0%% and 100%%");
    }
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    (void)old;
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *min = json_object_get(spec, "minAvailable");
    const json_t *max = json_object_get(spec, "maxUnavailable");
    if (min && max)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec", NULL, false,
                            "minAvailable and maxUnavailable cannot be both set");
    validate_bound(min, "spec.minAvailable", errs);
    validate_bound(max, "spec.maxUnavailable", errs);
}

static json_t *bound_cell(const json_t *value)
{
    if (json_is_integer(value)) {
        char buf[32];
        snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(value));
        return json_string(buf);
    }
    return json_string(json_is_string(value) ? json_string_value(value) : "N/A");
}

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    cells[COL_MIN_AVAILABLE] = bound_cell(ck__json_path(obj, "spec.minAvailable"));
    cells[COL_MAX_UNAVAILABLE] = bound_cell(ck__json_path(obj, "spec.maxUnavailable"));
}

static const char *const short_names[] = {"pdb", NULL};
static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_MIN_AVAILABLE] = CK__COMPUTED_COLUMN(
        "Min Available", "string",
        "The minimum number of pods that must be available simultaneously.  This can be either an "
        "integer or a string specifying a percentage, e.g. \"28%\".",
        0),
    [COL_MAX_UNAVAILABLE] = CK__COMPUTED_COLUMN(
        "Max Unavailable", "string",
        "The maximum number of pods that may be unavailable simultaneously.  This can be either "
        "an integer or a string specifying a percentage, e.g. \"28%\".",
        0),
    [COL_ALLOWED_DISRUPTIONS] = {"Allowed Disruptions", "integer", "",
                                 "Calculated number of pods that may be disrupted at this time.", 0,
                                 ".status.disruptionsAllowed", CK_CELL_ABSENT_ZERO, false},
    [COL_AGE] = CK__AGE_COLUMN,
};

const struct ck_kind ck__kind_poddisruptionbudget = {
    .group = "policy",
    .version = "v1",
    .kind = "PodDisruptionBudget",
    .list_kind = "PodDisruptionBudgetList",
    .resource = "poddisruptionbudgets",
    .singular = "poddisruptionbudget",
    .short_names = short_names,
    .namespaced = true,
    .has_generation = true,
    .schema = "io.k8s.api.policy.v1.PodDisruptionBudget",
    CK__KIND_SUBRESOURCES(ck__status_subresource),
    .status_keeps_metadata = ck__status_keeps_labels,
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .prepare_for_create = prepare_for_create,
    .validate = validate,
};
