/*
 * daemonset.c - the DaemonSet kind (apps/v1): one pod per eligible node.
 *
 * Mirrors Kubernetes' pkg/registry/apps/daemonset/strategy.go: the server
 * owns status, which a create starts empty; the selector and template rules
 * every workload shares (workload.c); the update strategy defaults from the
 * schema (RollingUpdate, maxUnavailable 1, maxSurge 0). The template generation
 * (the internal spec.templateGeneration, which apps/v1 spells as the annotation
 * deprecated.daemonset.template.generation) starts at 1 and grows by one with each
 * change of the template; clients cannot change it. kubectl's columns,
 * with the NODE SELECTOR computed from the template's nodeSelector.
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
    COL_DESIRED,
    COL_CURRENT,
    COL_READY,
    COL_UP_TO_DATE,
    COL_AVAILABLE,
    COL_NODE_SELECTOR,
    COL_AGE,
    COL_CONTAINERS,
    COL_IMAGES,
    COL_SELECTOR,
};

/* apps/v1 carries the internal spec.templateGeneration as this annotation. */
#define TEMPLATE_GENERATION "deprecated.daemonset.template.generation"

/* The template generation obj's annotation holds; 0 when absent or malformed. */
static long long template_generation(const json_t *obj)
{
    const char *s = json_string_value(json_object_get(
        json_object_get(json_object_get(obj, "metadata"), "annotations"), TEMPLATE_GENERATION));
    char *end = NULL;
    long long v = s && *s ? strtoll(s, &end, 10) : 0;
    return end && *end == '\0' ? v : 0;
}

static int set_template_generation(json_t *obj, long long generation)
{
    json_t *annotations = ck__object_at(ck__object_at(obj, "metadata"), "annotations");
    char buf[32];
    snprintf(buf, sizeof(buf), "%lld", generation);
    return annotations &&
                   json_object_set_new(annotations, TEMPLATE_GENERATION, json_string(buf)) == 0
               ? 0
               : CK_ENOMEM;
}

static int prepare_for_create(json_t *obj)
{
    if (json_object_set_new(obj, "status", json_object()) < 0)
        return CK_ENOMEM;
    long long generation = template_generation(obj);
    return set_template_generation(obj, generation < 1 ? 1 : generation);
}

/* The template generation is the server's: kept, and one more when the template changed. */
static int prepare_for_update(json_t *obj, const json_t *old)
{
    long long generation = template_generation(old);
    if (generation < 1)
        generation = 1;
    const json_t *a = json_object_get(json_object_get(old, "spec"), "template");
    const json_t *b = json_object_get(json_object_get(obj, "spec"), "template");
    if (!json_equal(a ? a : json_null(), b ? b : json_null()))
        generation++;
    return set_template_generation(obj, generation);
}

/* "k1=v1,k2=v2" from a map of labels, sorted as labels.SelectorFromSet prints; "<none>" when empty.
 */
static json_t *node_selector_cell(const json_t *map)
{
    size_t n = json_object_size(map), total = 1, i = 0;
    if (n == 0)
        return json_string("<none>");
    const char **keys = calloc(n, sizeof(*keys));
    if (!keys)
        return NULL;
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)map, key, value)
    {
        keys[i++] = key;
        total += strlen(key) + strlen(json_string_value(value) ? json_string_value(value) : "") + 2;
    }
    for (size_t a = 1; a < n; a++) /* insertion sort: selectors are short */
        for (size_t b = a; b > 0 && strcmp(keys[b - 1], keys[b]) > 0; b--) {
            const char *t = keys[b];
            keys[b] = keys[b - 1];
            keys[b - 1] = t;
        }
    char *buf = calloc(1, total);
    json_t *out = NULL;
    if (buf) {
        for (i = 0; i < n; i++) {
            const char *v = json_string_value(json_object_get(map, keys[i]));
            if (i > 0)
                strcat(buf, ",");
            strcat(buf, keys[i]);
            strcat(buf, "=");
            strcat(buf, v ? v : "");
        }
        out = json_string(buf);
    }
    free(buf);
    free(keys);
    return out;
}

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    cells[COL_NODE_SELECTOR] =
        node_selector_cell(ck__json_path(obj, "spec.template.spec.nodeSelector"));
    ck__workload_wide_cells(obj, cells, COL_CONTAINERS);
}

static const char *const short_names[] = {"ds", NULL};
static const char *const categories[] = {"all", NULL};
static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_DESIRED] = {"Desired", "integer", "",
                     "The total number of nodes that should be running the daemon pod.", 0,
                     ".status.desiredNumberScheduled", CK_CELL_ABSENT_ZERO, false},
    [COL_CURRENT] = {"Current", "integer", "",
                     "The number of nodes that are running at least 1 daemon pod.", 0,
                     ".status.currentNumberScheduled", CK_CELL_ABSENT_ZERO, false},
    [COL_READY] = {"Ready", "integer", "",
                   "The number of nodes that should be running the daemon pod and have one or "
                   "more of the daemon pod running and ready.",
                   0, ".status.numberReady", CK_CELL_ABSENT_ZERO, false},
    [COL_UP_TO_DATE] = {"Up-to-date", "integer", "",
                        "The total number of nodes that are running updated daemon pod", 0,
                        ".status.updatedNumberScheduled", CK_CELL_ABSENT_ZERO, false},
    [COL_AVAILABLE] = {"Available", "integer", "",
                       "The number of nodes that should be running the daemon pod and have one or "
                       "more of the daemon pod running and available.",
                       0, ".status.numberAvailable", CK_CELL_ABSENT_ZERO, false},
    [COL_NODE_SELECTOR] =
        CK__COMPUTED_COLUMN("Node Selector", "string",
                            "NodeSelector is a selector which must be true for the pod to fit on "
                            "a node.",
                            0),
    [COL_AGE] = CK__AGE_COLUMN,
    [COL_CONTAINERS] = CK__CONTAINERS_COLUMN(1),
    [COL_IMAGES] = CK__IMAGES_COLUMN(1),
    [COL_SELECTOR] = CK__COMPUTED_COLUMN(
        "Selector", "string", "A label query over pods that are managed by the daemon set.", 1),
};

const struct ck_kind ck__kind_daemonset = {
    .group = "apps",
    .version = "v1",
    .kind = "DaemonSet",
    .list_kind = "DaemonSetList",
    .resource = "daemonsets",
    .singular = "daemonset",
    .short_names = short_names,
    .categories = categories,
    .namespaced = true,
    .has_generation = true,
    .schema = "io.k8s.api.apps.v1.DaemonSet",
    CK__KIND_SUBRESOURCES(ck__status_subresource),
    .status_keeps_metadata = ck__status_keeps_labels,
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .prepare_for_create = prepare_for_create,
    .prepare_for_update = prepare_for_update,
    .defaults = ck__workload_defaults,
    .validate = ck__workload_validate,
};
