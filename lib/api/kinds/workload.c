/*
 * workload.c - what Deployments and ReplicaSets share: a selector that is
 * non-empty, matches the template's labels and never changes; a template
 * whose pods restart Always; pod spec defaults in the template; and the wide
 * printing cells (containers, images, selector).
 *
 * Mirrors Kubernetes' pkg/apis/apps/validation (ValidateDeploymentSpec,
 * ValidateReplicaSetSpec) and printers.go's wide workload columns.
 *
 * Threading: pure functions over the caller's values.
 *
 * Tested by tests/api/test_strategy.c (selector and template rules of
 * Deployments and ReplicaSets) and test_printers.c (the wide columns).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "ckube/internal/util.h"

int ck__workload_defaults(json_t *obj)
{
    return ck__pod_spec_default(
        json_object_get(json_object_get(json_object_get(obj, "spec"), "template"), "spec"));
}

void ck__workload_validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *selector = json_object_get(spec, "selector");
    const json_t *template_labels = ck__json_path(obj, "spec.template.metadata.labels");
    struct ck_label_selector *s = NULL;
    struct ck_err err = {0};
    int r = selector ? ck_label_selector_from_object(selector, &s, &err) : 0;
    if (!selector) {
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.selector", NULL, false, NULL);
    } else if (r == CK_ENOMEM) {
        errs->nomem = true;
    } else if (r < 0) {
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.selector", NULL, false, "%s", err.msg);
    } else if (ck_label_selector_is_empty(s)) {
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.selector", NULL, false,
                            "empty selector is invalid for deployment");
    } else if (!ck_label_selector_matches(s, template_labels)) {
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.template.metadata.labels", NULL, false,
                            "`selector` does not match template `labels`");
    }
    ck_label_selector_free(s);
    if (old &&
        !json_equal((json_t *)selector, json_object_get(json_object_get(old, "spec"), "selector")))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.selector", NULL, false,
                            "field is immutable");
    const json_t *pod_spec = ck__json_path(obj, "spec.template.spec");
    ck__pod_spec_validate(pod_spec, "spec.template.spec", true, errs);
    const char *restart = json_string_value(json_object_get(pod_spec, "restartPolicy"));
    if (restart && strcmp(restart, "Always") != 0)
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, "spec.template.spec.restartPolicy",
                            restart, true, "supported values: \"Always\"");
}

/* Comma-joins field of each element of array (container names, images). */
static json_t *join_field(const json_t *array, const char *field)
{
    size_t total = 1, i;
    json_t *item;
    json_array_foreach(array, i, item)
    {
        const char *s = json_string_value(json_object_get(item, field));
        total += (s ? strlen(s) : 0) + 1;
    }
    char *buf = ck__calloc(1, total);
    if (!buf)
        return NULL; /* out of memory: the Table fails */
    json_array_foreach(array, i, item)
    {
        const char *s = json_string_value(json_object_get(item, field));
        if (i > 0)
            strcat(buf, ",");
        strcat(buf, s ? s : "");
    }
    json_t *out = json_string(buf);
    free(buf);
    return out;
}

static json_t *selector_cell(const json_t *selector)
{
    struct ck_label_selector *s = NULL;
    if (!selector)
        return json_string("<none>");
    int r = ck_label_selector_from_object(selector, &s, NULL);
    if (r < 0) /* out of memory: NULL, the Table fails */
        return r == CK_ENOMEM ? NULL : json_string("<error>");
    char *text = ck_label_selector_string(s);
    ck_label_selector_free(s);
    json_t *out = text ? json_string(text) : NULL;
    free(text);
    return out;
}

void ck__workload_wide_cells(const json_t *obj, json_t **cells, size_t at)
{
    const json_t *containers = ck__json_path(obj, "spec.template.spec.containers");
    cells[at] = join_field(containers, "name");
    cells[at + 1] = join_field(containers, "image");
    cells[at + 2] = selector_cell(ck__json_path(obj, "spec.selector"));
}
