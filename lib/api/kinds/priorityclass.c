/*
 * priorityclass.c - the PriorityClass kind (scheduling.k8s.io/v1): a name
 * for a pod priority value.
 *
 * Mirrors Kubernetes' pkg/registry/scheduling/priorityclass/strategy.go and
 * pkg/apis/scheduling/validation: cluster-scoped, no status; preemptionPolicy
 * defaults to PreemptLowerPriority (the schema) and is PreemptLowerPriority
 * or Never; a user class's value is at most 1000000000; names starting
 * "system-" are the two classes the API server creates at start
 * (system-cluster-critical 2000000000, system-node-critical 2000001000, not
 * global defaults; lib/apiserver/server.c). value and preemptionPolicy never
 * change. The printer shows NAME, VALUE, GLOBAL-DEFAULT, AGE and
 * PREEMPTIONPOLICY as kube-apiserver's table does.
 *
 * The Priority admission plugin, which refuses a second globalDefault class and
 * gives pods their class's value, is the API server's
 * (lib/apiserver/admission/priority.c).
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_scheduling.c and tests/e2e/test_kinds.sh.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"

#define HIGHEST_USER_DEFINABLE 1000000000LL

static const struct {
    const char *name;
    long long value;
} system_classes[] = {
    {"system-node-critical", 2000001000LL},
    {"system-cluster-critical", 2000000000LL},
};

static void validate_system_class(const char *name, long long value, bool global,
                                  struct ck_field_errors *errs)
{
    const char *prefix = "priority class names with 'system-' prefix are reserved for system use "
                         "only. error: ";
    for (size_t i = 0; i < CK__COUNT(system_classes); i++) {
        if (strcmp(system_classes[i].name, name) != 0)
            continue;
        if (system_classes[i].value != value)
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "metadata.name", NULL, false,
                                "%svalue of %s PriorityClass must be %lld", prefix, name,
                                system_classes[i].value);
        else if (global)
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "metadata.name", NULL, false,
                                "%sglobalDefault of %s PriorityClass must be false", prefix, name);
        return;
    }
    ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "metadata.name", NULL, false,
                        "%s%s is not a known system priority class", prefix, name);
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    const char *name = ck__str_at(obj, "metadata.name");
    long long value = ck__int_at(obj, "value");
    bool global = json_is_true(json_object_get(obj, "globalDefault"));
    if (name && strncmp(name, "system-", 7) == 0)
        validate_system_class(name, value, global, errs);
    else if (value > HIGHEST_USER_DEFINABLE)
        ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "value", NULL, false,
                            "maximum allowed value of a user defined priority is %lld",
                            HIGHEST_USER_DEFINABLE);
    const char *policy = ck__str_at(obj, "preemptionPolicy");
    if (policy && strcmp(policy, "PreemptLowerPriority") != 0 && strcmp(policy, "Never") != 0)
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, "preemptionPolicy", policy, true,
                            "supported values: \"Never\", \"PreemptLowerPriority\"");
    if (!old)
        return;
    if (value != ck__int_at(old, "value"))
        ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "value", NULL, false,
                            "may not be changed in an update.");
    const char *was = ck__str_at(old, "preemptionPolicy");
    if (strcmp(policy ? policy : "", was ? was : "") != 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "preemptionPolicy", policy ? policy : "", true,
                            "field is immutable");
}

enum {
    COL_NAME,
    COL_VALUE,
    COL_GLOBAL_DEFAULT,
    COL_AGE,
    COL_PREEMPTION_POLICY,
};

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    const char *policy = ck__str_at(obj, "preemptionPolicy");
    cells[COL_GLOBAL_DEFAULT] = json_boolean(json_is_true(json_object_get(obj, "globalDefault")));
    cells[COL_PREEMPTION_POLICY] = json_string(policy ? policy : "");
}

static const char *const short_names[] = {"pc", NULL};

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_VALUE] = {"Value", "integer", "",
                   "value represents the integer value of this priority class.", 0, ".value",
                   CK_CELL_ABSENT_ZERO, false},
    [COL_GLOBAL_DEFAULT] = CK__COMPUTED_COLUMN(
        "Global-Default", "boolean",
        "globalDefault specifies whether this PriorityClass should be considered as the default "
        "priority for pods that do not have any priority class.",
        0),
    [COL_AGE] = CK__AGE_COLUMN,
    [COL_PREEMPTION_POLICY] = CK__COMPUTED_COLUMN(
        "PreemptionPolicy", "string",
        "preemptionPolicy is the Policy for preempting pods with lower priority.", 0),
};

const struct ck_kind ck__kind_priorityclass = {
    .group = "scheduling.k8s.io",
    .version = "v1",
    .kind = "PriorityClass",
    .list_kind = "PriorityClassList",
    .resource = "priorityclasses",
    .singular = "priorityclass",
    .short_names = short_names,
    .namespaced = false,
    .admission_lists_all = true,
    .role = CK_KIND_ROLE_PRIORITY_CLASS,
    .schema = "io.k8s.api.scheduling.v1.PriorityClass",
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .validate = validate,
};
