/*
 * statefulset.c - the StatefulSet kind (apps/v1): pods with stable names and
 * claims.
 *
 * Mirrors Kubernetes' pkg/registry/apps/statefulset/strategy.go: the server
 * owns status (a create starts at replicas 0); the selector and template
 * rules every workload shares (workload.c); the Scale view of spec.replicas;
 * defaults from the schema (OrderedReady, RollingUpdate with partition 0,
 * Retain claims). kubectl's columns: READY is readyReplicas/replicas.
 * rollingUpdate.maxUnavailable is served only while the gate
 * MaxUnavailableStatefulSet (alpha in 1.32, off) is on: the schema names it;
 * when present it is a number or a percentage, not 0, at most 100%.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_kinds.c (descriptor) and tests/e2e/test_workloads.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"

enum {
    COL_NAME,
    COL_READY,
    COL_AGE,
    COL_CONTAINERS,
    COL_IMAGES,
};

static int prepare_for_create(json_t *obj)
{
    return json_object_set_new(obj, "status", json_pack("{s:i}", "replicas", 0)) < 0 ? CK_ENOMEM
                                                                                     : 0;
}

/*
 * The set's own rules after the workload's (validateRollingUpdateStatefulSet):
 * rollingUpdate.maxUnavailable is a non-negative number or a percentage, not 0, at most
 * 100%.
 */
static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    ck__workload_validate(obj, old, errs);
    static const char path[] = "spec.updateStrategy.rollingUpdate.maxUnavailable";
    const json_t *v = ck__json_path(obj, path);
    if (json_is_integer(v)) {
        char buf[32];
        snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
        if (json_integer_value(v) < 0)
            ck_field_errors_add(errs, CK_FIELD_INVALID, path, buf, false,
                                "must be greater than or equal to 0");
        if (json_integer_value(v) == 0)
            ck_field_errors_add(errs, CK_FIELD_INVALID, path, buf, false, "cannot be 0");
    } else if (json_is_string(v)) {
        const char *text = json_string_value(v);
        size_t digits = strspn(text, "0123456789");
        if (digits == 0 || strcmp(text + digits, "%") != 0) {
            ck_field_errors_add(errs, CK_FIELD_INVALID, path, text, true,
                                "a valid percent string must be a numeric string followed by an "
                                "ending '%%' (e.g. '1%%',  or '93%%', regex used for validation "
                                "is '[0-9]+%%')");
        } else if (strtol(text, NULL, 10) == 0) {
            ck_field_errors_add(errs, CK_FIELD_INVALID, path, text, true, "cannot be 0");
        } else if (strtol(text, NULL, 10) > 100) {
            ck_field_errors_add(errs, CK_FIELD_INVALID, path, text, true,
                                "must not be greater than 100%%");
        }
    }
}

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    char buf[64];
    snprintf(buf, sizeof(buf), "%lld/%lld", ck__int_at(obj, "status.readyReplicas"),
             ck__int_at(obj, "spec.replicas"));
    cells[COL_READY] = json_string(buf);
    json_t *wide[3] = {NULL, NULL, NULL}; /* containers, images and a selector kubectl omits */
    ck__workload_wide_cells(obj, wide, 0);
    cells[COL_CONTAINERS] = wide[0];
    cells[COL_IMAGES] = wide[1];
    json_decref(wide[2]);
}

static const char *const short_names[] = {"sts", NULL};
static const char *const categories[] = {"all", NULL};
static const struct ck_subresource subresources[] = {
    CK__STATUS_SUBRESOURCE,
    CK__SCALE_SUBRESOURCE,
};

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_READY] = CK__COMPUTED_COLUMN("Ready", "string", "Number of the pod with ready state", 0),
    [COL_AGE] = CK__AGE_COLUMN,
    [COL_CONTAINERS] = CK__CONTAINERS_COLUMN(1),
    [COL_IMAGES] = CK__IMAGES_COLUMN(1),
};

static const struct ck_api_feature features[] = {
    {"MaxUnavailableStatefulSet", "ALPHA", false, "1.24"},
};

const struct ck_kind ck__kind_statefulset = {
    .group = "apps",
    .version = "v1",
    .kind = "StatefulSet",
    .list_kind = "StatefulSetList",
    .resource = "statefulsets",
    .singular = "statefulset",
    .short_names = short_names,
    .categories = categories,
    .namespaced = true,
    .has_generation = true,
    .schema = "io.k8s.api.apps.v1.StatefulSet",
    CK__KIND_SUBRESOURCES(subresources),
    .status_keeps_metadata = ck__status_keeps_labels,
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .prepare_for_create = prepare_for_create,
    .defaults = ck__workload_defaults,
    .validate = validate,
    .features = features,
    .n_features = CK__COUNT(features),
};
