/*
 * resourcequota.c - the ResourceQuota kind (v1): a namespace's hard limits on what its
 * objects may use, and the usage the server has counted against them.
 *
 * Mirrors Kubernetes' pkg/registry/core/resourcequota/strategy.go and
 * ValidateResourceQuota, ValidateResourceQuotaUpdate and
 * ValidateResourceQuotaStatusUpdate in pkg/apis/core/validation: namespaced, with a
 * status subresource; a create starts with an empty status and an update of the main
 * resource keeps the stored one. spec.hard and status.hard/used name standard quota
 * resources or qualified names with non-negative quantities (whole numbers for
 * counts); spec.scopes and spec.scopeSelector name standard scopes that apply to the
 * resources limited, never both of BestEffort and NotBestEffort or of Terminating and
 * NotTerminating; scopes may not change. kubectl's columns: NAME, AGE, REQUEST, LIMIT
 * ("requests.cpu: 0/1, pods: 1/2"). The ResourceQuota admission plugin
 * (lib/apiserver/admission/resource_quota.c) charges usage, the resourcequota
 * controller (lib/controllers/resourcequota/) recounts it.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_kinds.c, tests/api/test_quota.c (validation),
 * tests/apiserver/test_admission.c and tests/e2e/test_quota.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "ckube/internal/util.h"
#include "ckube/quota.h"

enum { COL_NAME, COL_AGE, COL_REQUEST, COL_LIMIT };

static const char *const standard_quota[] = {"cpu",
                                             "memory",
                                             "ephemeral-storage",
                                             "requests.cpu",
                                             "requests.memory",
                                             "requests.storage",
                                             "requests.ephemeral-storage",
                                             "limits.cpu",
                                             "limits.memory",
                                             "limits.ephemeral-storage",
                                             "pods",
                                             "services",
                                             "replicationcontrollers",
                                             "resourcequotas",
                                             "secrets",
                                             "persistentvolumeclaims",
                                             "configmaps",
                                             "services.nodeports",
                                             "services.loadbalancers",
                                             NULL};
static const char *const integer_resources[] = {"pods",
                                                "services",
                                                "replicationcontrollers",
                                                "resourcequotas",
                                                "secrets",
                                                "configmaps",
                                                "persistentvolumeclaims",
                                                "services.nodeports",
                                                "services.loadbalancers",
                                                NULL};
static const char *const scopes[] = {"Terminating",
                                     "NotTerminating",
                                     "BestEffort",
                                     "NotBestEffort",
                                     "PriorityClass",
                                     "CrossNamespacePodAffinity",
                                     NULL};

static bool in(const char *s, const char *const *set)
{
    for (; s && *set; set++)
        if (strcmp(s, *set) == 0)
            return true;
    return false;
}

static bool has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* helper.IsStandardQuotaResourceName: the list, or a hugepages name. */
static bool is_standard_quota(const char *name)
{
    return in(name, standard_quota) || has_prefix(name, "hugepages-") ||
           has_prefix(name, "requests.hugepages-");
}

/* helper.IsIntegerResourceName: counts, and extended resources. */
static bool is_integer(const char *name)
{
    const char *slash = strchr(name, '/');
    bool native = !slash || strstr(name, "kubernetes.io/") != NULL;
    return in(name, integer_resources) || (!native && !has_prefix(name, "requests."));
}

/* ValidateResourceQuotaResourceName and ValidateResourceQuantityValue for one entry. */
static void validate_entry(const char *path, const char *name, const json_t *value,
                           struct ck_field_errors *errs)
{
    char field[320];
    snprintf(field, sizeof(field), "%s[%s]", path, name);
    size_t before = errs->len;
    ck_validate_qualified_name(name, field, errs);
    if (errs->len == before && !strchr(name, '/') && !is_standard_quota(name) &&
        strcmp(name, "storage") != 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, field, name, true,
                            "must be a standard resource type or fully qualified");
    if (!strchr(name, '/') && !is_standard_quota(name))
        ck_field_errors_add(errs, CK_FIELD_INVALID, field, name, true,
                            "must be a standard resource for quota");
    char buf[48];
    const char *text = json_is_string(value) ? json_string_value(value) : NULL;
    if (!text && json_is_integer(value))
        snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(value)), text = buf;
    int64_t milli = 0;
    if (!text || ck_quantity_milli(text, &milli) < 0)
        return; /* the schema refuses what is no quantity */
    if (milli < 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, field, text, true,
                            "must be greater than or equal to 0");
    if (is_integer(name) && milli % 1000 != 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, field, text, true, "must be an integer");
}

static void validate_list(const json_t *list, const char *path, struct ck_field_errors *errs)
{
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)list, name, v)
    {
        validate_entry(path, name, v, errs);
    }
}

/* IsResourceQuotaScopeValidForResource */
static bool scope_valid_for(const char *scope, const char *resource)
{
    static const char *const pod_compute[] = {
        "cpu", "limits.cpu", "limits.memory", "memory", "requests.cpu", "requests.memory", NULL};
    if (strcmp(scope, "BestEffort") == 0)
        return strcmp(resource, "pods") == 0;
    if (in(scope, scopes))
        return strcmp(resource, "pods") == 0 || in(resource, pod_compute);
    return true;
}

/* Whether any standard hard resource does not fit scope. */
static bool misapplied(const char *scope, const json_t *hard)
{
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)hard, name, v)
    {
        if (is_standard_quota(name) && !scope_valid_for(scope, name))
            return true;
    }
    return false;
}

static bool conflicting(bool best, bool not_best, bool term, bool not_term)
{
    return (best && not_best) || (term && not_term);
}

static void validate_scopes(const json_t *spec, struct ck_field_errors *errs)
{
    const json_t *hard = json_object_get(spec, "hard");
    const json_t *list = json_object_get(spec, "scopes");
    char *shown = json_array_size(list) ? json_dumps(list, JSON_COMPACT) : NULL;
    bool seen[4] = {0};
    size_t i;
    const json_t *s;
    json_array_foreach(list, i, s)
    {
        const char *scope = json_string_value(s);
        if (!in(scope, scopes))
            ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.scopes", shown, false,
                                "unsupported scope");
        if (scope && misapplied(scope, hard))
            ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.scopes", shown, false,
                                "unsupported scope applied to resource");
        for (int k = 0; k < 4 && scope; k++)
            seen[k] |= strcmp(scope, scopes[k]) == 0;
    }
    if (conflicting(seen[2], seen[3], seen[0], seen[1]))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.scopes", shown, false,
                            "conflicting scopes");
    free(shown);

    const json_t *selector = json_object_get(spec, "scopeSelector");
    if (!json_is_object(selector))
        return;
    const char *path = "spec.scopeSelector.matchExpressions";
    bool seen2[4] = {0};
    json_array_foreach(json_object_get(selector, "matchExpressions"), i, s)
    {
        const char *scope = json_string_value(json_object_get(s, "scopeName"));
        const char *op = json_string_value(json_object_get(s, "operator"));
        size_t n_values = json_array_size(json_object_get(s, "values"));
        char field[96];
        if (!in(scope, scopes)) {
            snprintf(field, sizeof(field), "%s.scopeName", path);
            ck_field_errors_add(errs, CK_FIELD_INVALID, field, scope ? scope : "", true,
                                "unsupported scope");
        }
        if (scope && misapplied(scope, hard)) {
            char *sel = json_dumps(selector, JSON_COMPACT);
            ck_field_errors_add(errs, CK_FIELD_INVALID, path, sel, false,
                                "unsupported scope applied to resource");
            free(sel);
        }
        if (scope && in(scope, scopes) && strcmp(scope, "PriorityClass") != 0 &&
            (!op || strcmp(op, "Exists") != 0)) {
            snprintf(field, sizeof(field), "%s.operator", path);
            ck_field_errors_add(errs, CK_FIELD_INVALID, field, op ? op : "", true,
                                "must be 'Exist' when scope is any of "
                                "ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, "
                                "ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or "
                                "ResourceQuotaScopeCrossNamespacePodAffinity");
        }
        if (op && (strcmp(op, "In") == 0 || strcmp(op, "NotIn") == 0)) {
            if (n_values == 0) {
                snprintf(field, sizeof(field), "%s.values", path);
                ck_field_errors_add(errs, CK_FIELD_REQUIRED, field, NULL, false,
                                    "must be at least one value when `operator` is 'In' or "
                                    "'NotIn' for scope selector");
            }
        } else if (op && (strcmp(op, "Exists") == 0 || strcmp(op, "DoesNotExist") == 0)) {
            if (n_values != 0) {
                char *vals = json_dumps(json_object_get(s, "values"), JSON_COMPACT);
                snprintf(field, sizeof(field), "%s.values", path);
                ck_field_errors_add(errs, CK_FIELD_INVALID, field, vals, false,
                                    "must be no value when `operator` is 'Exist' or "
                                    "'DoesNotExist' for scope selector");
                free(vals);
            }
        } else {
            snprintf(field, sizeof(field), "%s.operator", path);
            ck_field_errors_add(errs, CK_FIELD_INVALID, field, op ? op : "", true,
                                "not a valid selector operator");
        }
        for (int k = 0; k < 4 && scope; k++)
            seen2[k] |= strcmp(scope, scopes[k]) == 0;
    }
    if (conflicting(seen2[2], seen2[3], seen2[0], seen2[1]))
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, "null", false, "conflicting scopes");
}

/* Whether two scope lists hold the same set. */
static bool same_scopes(const json_t *a, const json_t *b)
{
    size_t i;
    const json_t *s;
    json_array_foreach(a, i, s)
    {
        bool found = false;
        size_t j;
        const json_t *t;
        json_array_foreach(b, j, t)
        {
            found |= json_equal((json_t *)s, (json_t *)t);
        }
        if (!found)
            return false;
    }
    json_array_foreach(b, i, s)
    {
        bool found = false;
        size_t j;
        const json_t *t;
        json_array_foreach(a, j, t)
        {
            found |= json_equal((json_t *)s, (json_t *)t);
        }
        if (!found)
            return false;
    }
    return true;
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    const json_t *spec = json_object_get(obj, "spec");
    validate_list(json_object_get(spec, "hard"), "spec.hard", errs);
    validate_scopes(spec, errs);
    validate_list(ck__json_path(obj, "status.hard"), "status.hard", errs);
    validate_list(ck__json_path(obj, "status.used"), "status.used", errs);
    if (old && !same_scopes(json_object_get(spec, "scopes"), ck__json_path(old, "spec.scopes"))) {
        const json_t *now = json_object_get(spec, "scopes");
        char *shown = now ? json_dumps(now, JSON_COMPACT) : NULL;
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.scopes", shown ? shown : "null", false,
                            "field is immutable");
        free(shown);
    }
}

/* PrepareForCreate: the server owns status. */
static int prepare_for_create(json_t *obj)
{
    json_object_del(obj, "status");
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A quantity in a resource list as Quantity.String() prints it ("0" when absent). */
static void shown(const json_t *list, const char *name, char *buf, size_t size)
{
    const json_t *v = json_object_get(list, name);
    int64_t milli = 0;
    const char *s = json_string_value(v);
    char num[48];
    if (!s && json_is_integer(v))
        snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v)), s = num;
    if (!s || ck_quantity_milli(s, &milli) < 0)
        milli = 0;
    ck_quantity_format(milli, s && ck_quantity_is_binary(s), buf, size);
}

/* printResourceQuota: "name: used/hard" of spec.hard's names in order, limits.* apart. */
static void cells(const json_t *obj, long long now, json_t **row)
{
    (void)now;
    const json_t *hard = ck__json_path(obj, "spec.hard");
    size_t n = json_object_size(hard), k = 0;
    const char **names = n ? ck__calloc(n, sizeof(*names)) : NULL;
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)hard, name, v)
    {
        if (names)
            names[k++] = name;
    }
    if (names)
        qsort(names, k, sizeof(*names), cmp_str);
    char request[2048] = "", limit[2048] = "";
    for (size_t i = 0; i < k; i++) {
        char used[48], max[48];
        shown(ck__json_path(obj, "status.used"), names[i], used, sizeof(used));
        shown(ck__json_path(obj, "status.hard"), names[i], max, sizeof(max));
        char *col = has_prefix(names[i], "limits.") ? limit : request;
        size_t len = strlen(col);
        snprintf(col + len, sizeof(request) - len, "%s%s: %s/%s", len ? ", " : "", names[i], used,
                 max);
    }
    free(names);
    row[COL_REQUEST] = json_string(request);
    row[COL_LIMIT] = json_string(limit);
}

static const char *const short_names[] = {"quota", NULL};

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_AGE] = CK__AGE_COLUMN,
    [COL_REQUEST] = CK__COMPUTED_COLUMN(
        "Request", "string",
        "Request represents a minimum amount of cpu/memory that a container may consume.", 0),
    [COL_LIMIT] = CK__COMPUTED_COLUMN("Limit", "string",
                                      "Limits control the maximum amount of cpu/memory that a "
                                      "container may use independent of contention on the node.",
                                      0),
};

const struct ck_kind ck__kind_resourcequota = {
    .group = "",
    .version = "v1",
    .kind = "ResourceQuota",
    .list_kind = "ResourceQuotaList",
    .resource = "resourcequotas",
    .singular = "resourcequota",
    .namespaced = true,
    .short_names = short_names,
    .schema = "io.k8s.api.core.v1.ResourceQuota",
    CK__KIND_SUBRESOURCES(ck__status_subresource),
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .prepare_for_create = prepare_for_create,
    .validate = validate,
};
