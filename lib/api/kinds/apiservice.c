/*
 * apiservice.c - the APIService kind (apiregistration.k8s.io/v1): which server
 * serves one group/version, the API server itself ("local", no spec.service) or a
 * Service the API server proxies to (aggregation, lib/apiserver/aggregator.c).
 *
 * Mirrors kube-aggregator 1.32: pkg/registry/apiservice/strategy.go (cluster-scoped,
 * no generation; a create drops the status and marks a local APIService Available at
 * once, reason Local; an update keeps the status; a status write keeps the spec),
 * pkg/apis/apiregistration/v1/defaults.go (spec.service.port 443, from the schema),
 * pkg/apis/apiregistration/validation/validation.go (the name is version.group; the
 * group a DNS subdomain, empty only for v1; the version a DNS-1035 label;
 * groupPriorityMinimum 1..20000, versionPriority 1..1000; a local APIService has no
 * caBundle and no insecureSkipTLSVerify; a remote one names its Service's namespace
 * and name and does not set insecureSkipTLSVerify beside a caBundle; a condition's
 * status is True, False or Unknown) and pkg/registry/apiservice/etcd/etcd.go's table
 * (NAME, SERVICE "Local" or namespace/name, AVAILABLE "True" or "False (Reason)",
 * AGE; category api-extensions).
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_apiservice.c and tests/e2e/test_aggregation.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../internal.h"
#include "ckube/internal/util.h"

#define MAX_GROUP_PRIORITY   20000
#define MAX_VERSION_PRIORITY 1000

static int local_condition(json_t *obj)
{
    char now[CK__TIME_LEN];
    ck__time_format((int64_t)time(NULL), -1, now, sizeof(now));
    json_t *status = json_pack("{s:[{s:s, s:s, s:s, s:s, s:s}]}", "conditions", "type", "Available",
                               "status", "True", "lastTransitionTime", now, "reason", "Local",
                               "message", "Local APIServices are always available");
    return status && json_object_set_new(obj, "status", status) == 0 ? 0 : CK_ENOMEM;
}

static int prepare_for_create(json_t *obj)
{
    const json_t *spec = json_object_get(obj, "spec");
    if (json_is_object(json_object_get(spec, "service")))
        return json_object_set_new(obj, "status", json_object()) < 0 ? CK_ENOMEM : 0;
    return local_condition(obj);
}

static int prepare_for_update(json_t *obj, const json_t *old)
{
    const json_t *status = json_object_get(old, "status");
    json_t *copy = status ? json_deep_copy(status) : json_object();
    return json_object_set_new(obj, "status", copy) < 0 ? CK_ENOMEM : 0;
}

static void validate_name(const char *name, const char *group, const char *version,
                          struct ck_field_errors *errs)
{
    /* the path-segment rules are the kind's name rule; past them, version.group */
    if (!name || !*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strchr(name, '/') ||
        strchr(name, '%'))
        return;
    size_t len = strlen(version) + strlen(group) + 2;
    char *required = malloc(len);
    if (!required) {
        errs->nomem = true;
        return;
    }
    snprintf(required, len, "%s.%s", version, group);
    if (strcmp(name, required) != 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "metadata.name", name, true,
                            "must be `spec.version+\".\"+spec.group`: \"%s\"", required);
    free(required);
}

static void validate_conditions(const json_t *obj, struct ck_field_errors *errs)
{
    size_t i;
    const json_t *c;
    json_array_foreach(ck__json_path(obj, "status.conditions"), i, c)
    {
        const char *status = ck__str_at(c, "status");
        if (status && (strcmp(status, "True") == 0 || strcmp(status, "False") == 0 ||
                       strcmp(status, "Unknown") == 0))
            continue;
        char path[64];
        snprintf(path, sizeof(path), "status.conditions[%zu].status", i);
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, path, status ? status : "", true,
                            "supported values: \"False\", \"True\", \"Unknown\"");
    }
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    (void)old;
    const json_t *spec = json_object_get(obj, "spec");
    const char *group = ck__str_at(spec, "group");
    const char *version = ck__str_at(spec, "version");
    group = group ? group : "";
    version = version ? version : "";
    validate_name(ck__str_at(obj, "metadata.name"), group, version, errs);
    if (!*group && strcmp(version, "v1") != 0)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.group", NULL, false,
                            "only v1 may have an empty group and it better be legacy kube");
    if (*group)
        ck_validate_dns1123_subdomain(group, "spec.group", errs);
    if (strlen(version) > 63)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.version", version, true,
                            "must be no more than 63 characters");
    if (!ck__dns1035_label(version))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.version", version, true,
                            "a DNS-1035 label must consist of lower case alphanumeric characters "
                            "or '-', start with an alphabetic character, and end with an "
                            "alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used "
                            "for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')");
    char value[32];
    long long group_priority = ck__int_at(spec, "groupPriorityMinimum");
    if (group_priority <= 0 || group_priority > MAX_GROUP_PRIORITY) {
        snprintf(value, sizeof(value), "%lld", group_priority);
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.groupPriorityMinimum", value, false,
                            "must be positive and less than %d", MAX_GROUP_PRIORITY);
    }
    long long version_priority = ck__int_at(spec, "versionPriority");
    if (version_priority <= 0 || version_priority > MAX_VERSION_PRIORITY) {
        snprintf(value, sizeof(value), "%lld", version_priority);
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.versionPriority", value, false,
                            "must be positive and less than %d", MAX_VERSION_PRIORITY);
    }
    const json_t *service = json_object_get(spec, "service");
    const char *ca = ck__str_at(spec, "caBundle");
    bool insecure = json_is_true(json_object_get(spec, "insecureSkipTLSVerify"));
    if (!json_is_object(service)) {
        if (ca && *ca) {
            /* the length of the decoded bytes, as Go counts []byte */
            size_t n = strlen(ca), pad = 0;
            pad += n > 0 && ca[n - 1] == '=';
            pad += n > 1 && ca[n - 2] == '=';
            snprintf(value, sizeof(value), "%zu bytes", n / 4 * 3 - pad);
            ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.caBundle", value, true,
                                "local APIServices may not have a caBundle");
        }
        if (insecure)
            ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.insecureSkipTLSVerify", "true", false,
                                "local APIServices may not have insecureSkipTLSVerify");
    } else {
        const char *ns = ck__str_at(service, "namespace");
        const char *name = ck__str_at(service, "name");
        if (!ns || !*ns)
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.service.namespace", NULL, false,
                                NULL);
        if (!name || !*name)
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.service.name", NULL, false, NULL);
        if (insecure && ca && *ca)
            ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.insecureSkipTLSVerify", "true", false,
                                "may not be true if caBundle is present");
    }
    validate_conditions(obj, errs);
}

enum {
    COL_NAME,
    COL_SERVICE,
    COL_AVAILABLE,
    COL_AGE,
};

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    const json_t *service = ck__json_path(obj, "spec.service");
    char text[600];
    if (json_is_object(service)) {
        const char *ns = ck__str_at(service, "namespace"), *name = ck__str_at(service, "name");
        snprintf(text, sizeof(text), "%s/%s", ns ? ns : "", name ? name : "");
        cells[COL_SERVICE] = json_string(text);
    } else {
        cells[COL_SERVICE] = json_string("Local");
    }
    snprintf(text, sizeof(text), "Unknown");
    size_t i;
    const json_t *c;
    json_array_foreach(ck__json_path(obj, "status.conditions"), i, c)
    {
        const char *type = ck__str_at(c, "type");
        if (!type || strcmp(type, "Available") != 0)
            continue;
        const char *status = ck__str_at(c, "status"), *reason = ck__str_at(c, "reason");
        status = status ? status : "";
        if (strcmp(status, "True") != 0 && reason && *reason)
            snprintf(text, sizeof(text), "%s (%s)", status, reason);
        else
            snprintf(text, sizeof(text), "%s", status);
        break;
    }
    cells[COL_AVAILABLE] = json_string(text);
}

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_SERVICE] = CK__COMPUTED_COLUMN(
        "Service", "string", "The reference to the service that hosts this API endpoint.", 0),
    [COL_AVAILABLE] =
        CK__COMPUTED_COLUMN("Available", "string", "Whether this service is available.", 0),
    [COL_AGE] = CK__AGE_COLUMN,
};

static const char *const categories[] = {"api-extensions", NULL};
static const char *const status_keeps[] = {"labels", "annotations", "finalizers", "ownerReferences",
                                           NULL};

const struct ck_kind ck__kind_apiservice = {
    .group = "apiregistration.k8s.io",
    .version = "v1",
    .kind = "APIService",
    .list_kind = "APIServiceList",
    .resource = "apiservices",
    .singular = "apiservice",
    .categories = categories,
    .namespaced = false,
    .role = CK_KIND_ROLE_API_SERVICE,
    .name_rule = CK_NAME_PATH_SEGMENT,
    .schema = "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService",
    CK__KIND_SUBRESOURCES(ck__status_subresource),
    .status_keeps_metadata = status_keeps,
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .prepare_for_create = prepare_for_create,
    .prepare_for_update = prepare_for_update,
    .validate = validate,
};
