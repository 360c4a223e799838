/*
 * limitrange.c - the LimitRange kind (v1): per-namespace defaults and bounds
 * for the resources of containers, pods and claims.
 *
 * Mirrors Kubernetes' pkg/registry/core/limitrange/strategy.go and
 * ValidateLimitRange in pkg/apis/core/validation: namespaced, no status.
 * Each spec.limits[i] has a type (Pod, Container, PersistentVolumeClaim, or a
 * qualified name), at most one item per type; a Pod item may not have default
 * or defaultRequest; a PersistentVolumeClaim item needs a min or max storage;
 * for every resource, min <= defaultRequest <= default <= max, and
 * maxLimitRequestRatio is at least 1 and at most max/min, with Kubernetes'
 * messages. The quantities compared are printed as they are written (see
 * docs/differences.md). The printer shows NAME and CREATED AT as
 * kube-apiserver's table does. The LimitRanger admission plugin
 * (lib/apiserver/admission/limit_ranger.c) applies the ranges.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_kinds.c (descriptor), tests/apiserver/test_admission.c
 * and tests/e2e/test_admission.sh.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"

static const char *const bags[] = {"min", "max", "default", "defaultRequest",
                                   "maxLimitRequestRatio"};
enum { MIN, MAX, DEFAULT, DEFAULT_REQUEST, RATIO, N_BAGS };

/* The milli value of bag[resource] of item: true when present and parsable. */
static bool milli_of(const json_t *item, int bag, const char *resource, const char **ret_text,
                     int64_t *ret_milli)
{
    const char *text =
        json_string_value(json_object_get(json_object_get(item, bags[bag]), resource));
    *ret_text = text;
    return text && ck_quantity_milli(text, ret_milli) == 0;
}

/*
 * Compares bag a's and bag b's value for resource: when a > b, an error at bag at's
 * field showing bag shown's value (Kubernetes shows min at default[k], max at default[k]).
 */
static void ordered(const json_t *item, const char *path, const char *resource, int a, int b,
                    int at, int shown, const char *a_name, const char *b_name,
                    struct ck_field_errors *errs)
{
    const char *ta, *tb;
    int64_t ma, mb;
    if (!milli_of(item, a, resource, &ta, &ma) || !milli_of(item, b, resource, &tb, &mb) ||
        ma <= mb)
        return;
    char field[256];
    snprintf(field, sizeof(field), "%s.%s[%s]", path, bags[at], resource);
    ck_field_errors_add(errs, CK_FIELD_INVALID, field, shown == a ? ta : tb, true,
                        "%s value %s is greater than %s value %s", a_name, ta, b_name, tb);
}

static void validate_item(const json_t *item, const char *path, struct ck_field_errors *errs)
{
    const char *type = json_string_value(json_object_get(item, "type"));
    char field[256];
    snprintf(field, sizeof(field), "%s.type", path);
    if (!type || !*type)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, field, NULL, false, "%s", "");
    else if (!strchr(type, '/') && strcmp(type, "Pod") != 0 && strcmp(type, "Container") != 0 &&
             strcmp(type, "PersistentVolumeClaim") != 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, field, type, true,
                            "must be a standard limit type or fully qualified");
    bool pod = type && strcmp(type, "Pod") == 0;
    if (pod) {
        for (int b = DEFAULT; b <= DEFAULT_REQUEST; b++) {
            if (json_object_size(json_object_get(item, bags[b])) == 0)
                continue;
            snprintf(field, sizeof(field), "%s.%s", path, bags[b]);
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, field, NULL, false,
                                "may not be specified when `type` is 'Pod'");
        }
    }
    if (type && strcmp(type, "PersistentVolumeClaim") == 0 &&
        !json_object_get(json_object_get(item, "min"), "storage") &&
        !json_object_get(json_object_get(item, "max"), "storage")) {
        snprintf(field, sizeof(field), "%s.limits", path);
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, field, NULL, false,
                            "either minimum or maximum storage value is required, but neither "
                            "was provided");
    }
    /* every resource any bag names, once */
    for (int b = 0; b < N_BAGS; b++) {
        if (pod && (b == DEFAULT || b == DEFAULT_REQUEST))
            continue;
        const char *resource;
        json_t *v;
        json_object_foreach(json_object_get(item, bags[b]), resource, v)
        {
            bool seen = false;
            for (int e = 0; e < b && !seen; e++)
                seen = json_object_get(json_object_get(item, bags[e]), resource) != NULL &&
                       !(pod && (e == DEFAULT || e == DEFAULT_REQUEST));
            if (seen)
                continue;
            ordered(item, path, resource, MIN, MAX, MIN, MIN, "min", "max", errs);
            if (!pod) {
                ordered(item, path, resource, MIN, DEFAULT_REQUEST, DEFAULT_REQUEST,
                        DEFAULT_REQUEST, "min", "default request", errs);
                ordered(item, path, resource, DEFAULT_REQUEST, MAX, DEFAULT_REQUEST,
                        DEFAULT_REQUEST, "default request", "max", errs);
                ordered(item, path, resource, DEFAULT_REQUEST, DEFAULT, DEFAULT_REQUEST,
                        DEFAULT_REQUEST, "default request", "default limit", errs);
                ordered(item, path, resource, MIN, DEFAULT, DEFAULT, MIN, "min", "default", errs);
                ordered(item, path, resource, DEFAULT, MAX, DEFAULT, MAX, "default", "max", errs);
            }
            const char *tr, *tmin, *tmax;
            int64_t ratio, min, max;
            if (!milli_of(item, RATIO, resource, &tr, &ratio))
                continue;
            snprintf(field, sizeof(field), "%s.maxLimitRequestRatio[%s]", path, resource);
            if (ratio < 1000)
                ck_field_errors_add(errs, CK_FIELD_INVALID, field, tr, true,
                                    "ratio %s is less than 1", tr);
            if (milli_of(item, MIN, resource, &tmin, &min) &&
                milli_of(item, MAX, resource, &tmax, &max) && min > 0) {
                double limit = (double)max / (double)min;
                if ((double)ratio / 1000 > limit)
                    ck_field_errors_add(errs, CK_FIELD_INVALID, field, tr, true,
                                        "ratio %s is greater than max/min = %f", tr, limit);
            }
        }
    }
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    (void)old;
    const json_t *limits = ck__json_path(obj, "spec.limits");
    size_t i;
    json_t *item;
    json_array_foreach(limits, i, item)
    {
        char path[64];
        snprintf(path, sizeof(path), "spec.limits[%zu]", i);
        validate_item(item, path, errs);
        const char *type = json_string_value(json_object_get(item, "type"));
        for (size_t j = 0; type && j < i; j++) {
            const char *earlier =
                json_string_value(json_object_get(json_array_get(limits, j), "type"));
            if (earlier && strcmp(earlier, type) == 0) {
                char field[80];
                snprintf(field, sizeof(field), "%s.type", path);
                ck_field_errors_add(errs, CK_FIELD_DUPLICATE, field, type, true, "%s", "");
                break;
            }
        }
    }
}

static const struct ck_table_column columns[] = {
    CK__NAME_COLUMN(0),
    CK__CREATED_AT_COLUMN,
};

static const char *const short_names[] = {"limits", NULL};

const struct ck_kind ck__kind_limitrange = {
    .group = "",
    .version = "v1",
    .kind = "LimitRange",
    .list_kind = "LimitRangeList",
    .resource = "limitranges",
    .singular = "limitrange",
    .namespaced = true,
    .admission_lists_all = true,
    .short_names = short_names,
    .schema = "io.k8s.api.core.v1.LimitRange",
    CK__KIND_COLUMNS(columns),
    .cells = ck__cells_created_at,
    .validate = validate,
};
