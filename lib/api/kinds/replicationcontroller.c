/*
 * replicationcontroller.c - the ReplicationController kind (v1).
 *
 * Mirrors Kubernetes' pkg/registry/core/replicationcontroller/strategy.go,
 * SetDefaults_ReplicationController and ValidateReplicationController: the
 * ReplicaSet's older form, whose selector is a map of labels (equality only).
 * The server owns status, which a create starts at replicas 0; an empty
 * selector defaults to the template's labels, and so do the object's own
 * labels when it has none; the selector must not be empty and must match the
 * template's labels (the selector may change, unlike a ReplicaSet's); the
 * template's pods restart Always. The Scale view of spec.replicas serves
 * `kubectl scale rc`. Columns as kubectl's: DESIRED, CURRENT, READY.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_batch_kinds.c and tests/e2e/test_jobs.sh (scale rc).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "ckube/internal/util.h"

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

static int defaults(json_t *obj)
{
    json_t *spec = json_object_get(obj, "spec");
    if (!json_is_object(spec))
        return 0;
    json_t *template = json_object_get(spec, "template");
    if (!json_is_object(template))
        return 0;
    if (ck__pod_spec_default(ck__object_at(template, "spec")) < 0)
        return CK_ENOMEM;
    json_t *labels = json_object_get(json_object_get(template, "metadata"), "labels");
    if (json_object_size(labels) == 0)
        return 0;
    if (json_object_size(json_object_get(spec, "selector")) == 0 &&
        json_object_set_new(spec, "selector", ck__json_copy(labels)) < 0)
        return CK_ENOMEM;
    json_t *meta = ck__object_at(obj, "metadata");
    if (!meta)
        return CK_ENOMEM;
    if (json_object_size(json_object_get(meta, "labels")) == 0 &&
        json_object_set_new(meta, "labels", ck__json_copy(labels)) < 0)
        return CK_ENOMEM;
    return 0;
}

/* Every selector pair is among labels (labels.SelectorFromSet(selector).Matches). */
static bool selects(const json_t *selector, const json_t *labels)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)selector, k, v)
    {
        if (!json_equal(json_object_get(labels, k), (json_t *)v))
            return false;
    }
    return true;
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    (void)old;
    const json_t *selector = ck__json_path(obj, "spec.selector");
    const json_t *template = ck__json_path(obj, "spec.template");
    if (json_object_size(selector) == 0)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.selector", NULL, false, NULL);
    if (!template) {
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.template", NULL, false, NULL);
        return;
    }
    const json_t *labels = ck__json_path(obj, "spec.template.metadata.labels");
    if (json_object_size(selector) && !selects(selector, labels))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.template.metadata.labels", NULL, false,
                            "`selector` does not match template `labels`");
    const json_t *pod_spec = json_object_get(template, "spec");
    ck__pod_spec_validate(pod_spec, "spec.template.spec", true, errs);
    const char *restart = json_string_value(json_object_get(pod_spec, "restartPolicy"));
    if (restart && strcmp(restart, "Always") != 0)
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, "spec.template.spec.restartPolicy",
                            restart, true, "supported values: \"Always\"");
}

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    /* the wide cells read a LabelSelector: the map is its matchLabels */
    json_t *view =
        json_pack("{s:{s:O?, s:{s:O?}}}", "spec", "template", ck__json_path(obj, "spec.template"),
                  "selector", "matchLabels", ck__json_path(obj, "spec.selector"));
    if (view)
        ck__workload_wide_cells(view, cells, COL_CONTAINERS);
    json_decref(view);
}

static const char *const short_names[] = {"rc", NULL};
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

const struct ck_kind ck__kind_replicationcontroller = {
    .group = "",
    .version = "v1",
    .kind = "ReplicationController",
    .list_kind = "ReplicationControllerList",
    .resource = "replicationcontrollers",
    .singular = "replicationcontroller",
    .short_names = short_names,
    .categories = categories,
    .namespaced = true,
    .has_generation = true,
    .schema = "io.k8s.api.core.v1.ReplicationController",
    CK__KIND_SUBRESOURCES(subresources),
    .status_keeps_metadata = ck__status_keeps_labels,
    CK__KIND_FIELD_LABELS(field_labels),
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .prepare_for_create = prepare_for_create,
    .defaults = defaults,
    .validate = validate,
};
