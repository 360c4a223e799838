/*
 * deployment.c - the Deployment kind (apps/v1).
 *
 * Mirrors Kubernetes' pkg/registry/apps/deployment/strategy.go and the
 * defaulters of pkg/apis/apps/v1: the server owns status (a create starts
 * from none); strategy RollingUpdate with 25%/25% by default, Recreate
 * takes no rollingUpdate; the selector rules of every workload
 * (workload.c); a change of the annotations bumps the generation, as a
 * rollback annotation must; the Scale view of spec.replicas. The printer
 * computes READY as ready/desired.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_strategy.c, test_printers.c and test_kinds.c, and
 * by the kubectl tests that apply and scale the README's Deployment.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"

enum {
    COL_NAME,
    COL_READY,
    COL_UP_TO_DATE,
    COL_AVAILABLE,
    COL_AGE,
    COL_CONTAINERS,
    COL_IMAGES,
    COL_SELECTOR,
};

/* The server owns a workload's status: a create starts from none. */
static int prepare_for_create(json_t *obj)
{
    return json_object_set_new(obj, "status", json_object()) < 0 ? CK_ENOMEM : 0;
}

static int defaults(json_t *obj)
{
    if (ck__workload_defaults(obj) < 0)
        return CK_ENOMEM;
    json_t *spec = json_object_get(obj, "spec");
    if (!json_is_object(spec))
        return 0;
    json_t *strategy = ck__object_at(spec, "strategy");
    const char *type = json_string_value(json_object_get(strategy, "type"));
    if (!strategy)
        return CK_ENOMEM;
    if (!type) {
        type = "RollingUpdate";
        if (json_object_set_new(strategy, "type", json_string(type)) < 0)
            return CK_ENOMEM;
    }
    if (strcmp(type, "RollingUpdate") == 0) {
        json_t *rolling = ck__object_at(strategy, "rollingUpdate");
        if (!rolling ||
            (!json_object_get(rolling, "maxUnavailable") &&
             json_object_set_new(rolling, "maxUnavailable", json_string("25%")) < 0) ||
            (!json_object_get(rolling, "maxSurge") &&
             json_object_set_new(rolling, "maxSurge", json_string("25%")) < 0))
            return CK_ENOMEM;
    }
    return 0;
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    ck__workload_validate(obj, old, errs);
    const json_t *strategy = ck__json_path(obj, "spec.strategy");
    const char *type = json_string_value(json_object_get(strategy, "type"));
    if (type && strcmp(type, "Recreate") == 0 && json_object_get(strategy, "rollingUpdate"))
        ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "spec.strategy.rollingUpdate", NULL, false,
                            "may not be specified when strategy `type` is 'Recreate'");
}

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    char buf[64];
    snprintf(buf, sizeof(buf), "%lld/%lld", ck__int_at(obj, "status.readyReplicas"),
             ck__int_at(obj, "spec.replicas"));
    cells[COL_READY] = json_string(buf);
    ck__workload_wide_cells(obj, cells, COL_CONTAINERS);
}

static const char *const short_names[] = {"deploy", NULL};
static const char *const categories[] = {"all", NULL};
static const struct ck_subresource subresources[] = {
    CK__STATUS_SUBRESOURCE,
    CK__SCALE_SUBRESOURCE,
};

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_READY] = CK__COMPUTED_COLUMN("Ready", "string", "Number of the pod with ready state", 0),
    [COL_UP_TO_DATE] =
        {"Up-to-date", "integer", "",
         "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
         0, ".status.updatedReplicas", CK_CELL_ABSENT_ZERO, false},
    [COL_AVAILABLE] =
        {"Available", "integer", "",
         "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
         0, ".status.availableReplicas", CK_CELL_ABSENT_ZERO, false},
    [COL_AGE] = CK__AGE_COLUMN,
    [COL_CONTAINERS] = CK__CONTAINERS_COLUMN(1),
    [COL_IMAGES] = CK__IMAGES_COLUMN(1),
    [COL_SELECTOR] = CK__COMPUTED_COLUMN(
        "Selector", "string",
        "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.",
        1),
};

const struct ck_kind ck__kind_deployment = {
    .group = "apps",
    .version = "v1",
    .kind = "Deployment",
    .list_kind = "DeploymentList",
    .resource = "deployments",
    .singular = "deployment",
    .short_names = short_names,
    .categories = categories,
    .namespaced = true,
    .has_generation = true,
    .annotations_bump_generation = true,
    .schema = "io.k8s.api.apps.v1.Deployment",
    CK__KIND_SUBRESOURCES(subresources),
    .status_keeps_metadata = ck__status_keeps_labels,
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .prepare_for_create = prepare_for_create,
    .defaults = defaults,
    .validate = validate,
};
