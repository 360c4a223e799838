/*
 * replicaset.c - the ReplicaSet kind (apps/v1).
 *
 * Mirrors Kubernetes' pkg/registry/apps/replicaset/strategy.go: the server
 * owns status, which a create starts at replicas 0 (ReplicaSetStatus.replicas
 * has no omitempty); the selector rules of every workload (workload.c); the
 * Scale view of spec.replicas; the status.replicas field label. Its printer
 * reads every column but the wide ones from the object.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_strategy.c, test_printers.c and test_kinds.c, and
 * by the ReplicaSet controller's server-backed and e2e tests.
 */
#include "../internal.h"

enum {
    COL_NAME,
    COL_DESIRED,
    COL_CURRENT,
    COL_READY,
    COL_AGE,
    COL_CONTAINERS,
    COL_IMAGES,
    COL_SELECTOR,
};

static int prepare_for_create(json_t *obj)
{
    return json_object_set_new(obj, "status", json_pack("{s:i}", "replicas", 0)) < 0 ? CK_ENOMEM
                                                                                     : 0;
}

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    ck__workload_wide_cells(obj, cells, COL_CONTAINERS);
}

static const char *const short_names[] = {"rs", NULL};
static const char *const categories[] = {"all", NULL};
static const struct ck_subresource subresources[] = {
    CK__STATUS_SUBRESOURCE,
    CK__SCALE_SUBRESOURCE,
};

static const struct ck_field_label field_labels[] = {
    {"status.replicas", "status.replicas", CK_FIELD_LABEL_INT},
};

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_DESIRED] = {"Desired", "integer", "", "Number of desired pods.", 0, ".spec.replicas",
                     CK_CELL_ABSENT_ZERO, false},
    [COL_CURRENT] = {"Current", "integer", "", "Number of actual pods.", 0, ".status.replicas",
                     CK_CELL_ABSENT_ZERO, false},
    [COL_READY] = {"Ready", "integer", "", "Number of pods ready.", 0, ".status.readyReplicas",
                   CK_CELL_ABSENT_ZERO, false},
    [COL_AGE] = CK__AGE_COLUMN,
    [COL_CONTAINERS] = CK__CONTAINERS_COLUMN(1),
    [COL_IMAGES] = CK__IMAGES_COLUMN(1),
    [COL_SELECTOR] = CK__COMPUTED_COLUMN(
        "Selector", "string", "Label query over pods that should match the replica count.", 1),
};

const struct ck_kind ck__kind_replicaset = {
    .group = "apps",
    .version = "v1",
    .kind = "ReplicaSet",
    .list_kind = "ReplicaSetList",
    .resource = "replicasets",
    .singular = "replicaset",
    .short_names = short_names,
    .categories = categories,
    .namespaced = true,
    .has_generation = true,
    .schema = "io.k8s.api.apps.v1.ReplicaSet",
    CK__KIND_SUBRESOURCES(subresources),
    .status_keeps_metadata = ck__status_keeps_labels,
    CK__KIND_FIELD_LABELS(field_labels),
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .prepare_for_create = prepare_for_create,
    .defaults = ck__workload_defaults,
    .validate = ck__workload_validate,
};
