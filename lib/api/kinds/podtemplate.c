/*
 * podtemplate.c - the PodTemplate kind (v1): a stored pod template, for
 * tools and controllers that keep one apart from a workload.
 *
 * Mirrors Kubernetes' pkg/registry/core/podtemplate/strategy.go and
 * ValidatePodTemplate in pkg/apis/core/validation: namespaced, no status, a
 * generation; the template's pod spec gets the pod spec defaults and is
 * checked as a workload's template is (podspec.c). The printer shows NAME,
 * CONTAINERS, IMAGES and POD LABELS as kube-apiserver's table does.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_kinds.c (descriptor) and test_strategy.c.
 */
#include <stdlib.h>
#include <string.h>

#include "../internal.h"

static int defaults(json_t *obj)
{
    json_t *spec = json_object_get(json_object_get(obj, "template"), "spec");
    return json_is_object(spec) ? ck__pod_spec_default(spec) : 0;
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    (void)old;
    const json_t *spec = ck__json_path(obj, "template.spec");
    ck__pod_spec_validate(spec, "template.spec", true, errs);
}

enum {
    COL_NAME,
    COL_CONTAINERS,
    COL_IMAGES,
    COL_POD_LABELS,
};

/* The members called field of the list's objects, joined by commas. */
static json_t *join(const json_t *list, const char *field)
{
    size_t i, len = 0;
    const json_t *item;
    char buf[1024] = "";
    json_array_foreach(list, i, item)
    {
        const char *s = json_string_value(json_object_get(item, field));
        if (!s)
            continue;
        size_t n = strlen(s);
        if (len + n + 2 >= sizeof(buf))
            break;
        if (len)
            buf[len++] = ',';
        memcpy(buf + len, s, n + 1);
        len += n;
    }
    return json_string(buf);
}

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    const json_t *containers = ck__json_path(obj, "template.spec.containers");
    cells[COL_CONTAINERS] = join(containers, "name");
    cells[COL_IMAGES] = join(containers, "image");
    /* labels.FormatLabels: key=value sorted by key, or <none> */
    const json_t *labels = ck__json_path(obj, "template.metadata.labels");
    size_t n = json_object_size(labels), k = 0;
    const char **keys = n ? calloc(n, sizeof(*keys)) : NULL;
    if (n && !keys)
        return; /* the slot stays NULL: out of memory */
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)labels, key, value) keys[k++] = key;
    for (size_t a = 1; a < k; a++)
        for (size_t b = a; b > 0 && strcmp(keys[b - 1], keys[b]) > 0; b--) {
            const char *t = keys[b];
            keys[b] = keys[b - 1];
            keys[b - 1] = t;
        }
    char buf[1024] = "";
    size_t len = 0;
    for (size_t i = 0; i < k; i++) {
        const char *v = json_string_value(json_object_get(labels, keys[i]));
        int w =
            snprintf(buf + len, sizeof(buf) - len, "%s%s=%s", i ? "," : "", keys[i], v ? v : "");
        if (w < 0 || (size_t)w >= sizeof(buf) - len)
            break;
        len += (size_t)w;
    }
    free(keys);
    cells[COL_POD_LABELS] = json_string(len ? buf : "<none>");
}

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_CONTAINERS] = CK__CONTAINERS_COLUMN(0),
    [COL_IMAGES] = CK__IMAGES_COLUMN(0),
    [COL_POD_LABELS] =
        CK__COMPUTED_COLUMN("Pod Labels", "string", "The labels for the pod template.", 0),
};

const struct ck_kind ck__kind_podtemplate = {
    .group = "",
    .version = "v1",
    .kind = "PodTemplate",
    .list_kind = "PodTemplateList",
    .resource = "podtemplates",
    .singular = "podtemplate",
    .namespaced = true,
    .has_generation = true,
    .schema = "io.k8s.api.core.v1.PodTemplate",
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .defaults = defaults,
    .validate = validate,
};
