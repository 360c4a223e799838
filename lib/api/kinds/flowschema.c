/*
 * flowschema.c - the FlowSchema kind (flowcontrol.apiserver.k8s.io/v1): which
 * priority level a class of requests (by subject, verb, resource or URL) is
 * given under API Priority and Fairness.
 *
 * Mirrors Kubernetes' pkg/registry/flowcontrol/flowschema/strategy.go,
 * pkg/apis/flowcontrol/v1/defaults.go and pkg/apis/flowcontrol/validation:
 * cluster-scoped, generation kept, a status subresource (the server's
 * Dangling condition); matchingPrecedence defaults to 1000 and lies in
 * 1..10000, 1 only for the schema named exempt; the mandatory exempt and
 * catch-all schemas keep their fixed spec. The printer shows NAME,
 * PRIORITYLEVEL, MATCHINGPRECEDENCE, DISTINGUISHERMETHOD, AGE and MISSINGPL as
 * kube-apiserver's table does.
 *
 * The server keeps the bootstrap schemas present (lib/apiserver/flowcontrol.c);
 * requests are not classified by them (docs/differences.md).
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_flowcontrol.c and tests/e2e/test_events_flowcontrol.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"

#define DEFAULT_MATCHING_PRECEDENCE 1000
#define MAX_MATCHING_PRECEDENCE     10000

static const char supported_verbs[] =
    "\"create\", \"delete\", \"deletecollection\", \"get\", \"list\", \"patch\", \"proxy\", "
    "\"update\", \"watch\"";

static int defaults(json_t *obj)
{
    json_t *spec = json_object_get(obj, "spec");
    if (json_is_object(spec) && ck__int_at(spec, "matchingPrecedence") == 0 &&
        json_object_set_new(spec, "matchingPrecedence", json_integer(DEFAULT_MATCHING_PRECEDENCE)) <
            0)
        return CK_ENOMEM;
    return 0;
}

static bool has_wildcard(const json_t *list)
{
    size_t i;
    const json_t *s;
    json_array_foreach(list, i, s)
    {
        if (json_is_string(s) && strcmp(json_string_value(s), "*") == 0)
            return true;
    }
    return false;
}

/* Required when empty; '*' alone; otherwise each member passes ok (NULL: anything). */
static bool check_list(const json_t *list, const char *path, const char *required,
                       const char *other, struct ck_field_errors *errs)
{
    char value[512];
    if (json_array_size(list) == 0) {
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, path, NULL, false, "%s", required);
        return false;
    }
    if (json_array_size(list) > 1 && has_wildcard(list)) {
        ck__go_string_slice(list, value, sizeof(value));
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, value, false,
                            "if '*' is present, must not specify other %s", other);
        return false;
    }
    return !has_wildcard(list);
}

static void check_verbs(const json_t *rule, const char *at, struct ck_field_errors *errs)
{
    static const char *const known[] = {
        "get", "list", "create", "update", "delete", "deletecollection", "patch", "watch", "proxy"};
    char path[128], value[512];
    const json_t *verbs = json_object_get(rule, "verbs");
    snprintf(path, sizeof(path), "%s.verbs", at);
    if (!check_list(verbs, path, "verbs must contain at least one value", "verbs", errs))
        return;
    size_t i;
    const json_t *v;
    json_array_foreach(verbs, i, v)
    {
        bool ok = false;
        for (size_t k = 0; k < CK__COUNT(known) && !ok; k++)
            ok = json_is_string(v) && strcmp(json_string_value(v), known[k]) == 0;
        if (!ok) {
            ck__go_string_slice(verbs, value, sizeof(value));
            ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, path, value, false,
                                "supported values: %s", supported_verbs);
            return;
        }
    }
}

/* ValidateNonResourceURLPath's reason a path is wrong, or NULL. */
static const char *bad_url(const char *p)
{
    if (!*p)
        return "must not be empty";
    if (strcmp(p, "/") == 0)
        return NULL;
    if (p[0] != '/')
        return "must start with slash";
    if (strchr(p, ' '))
        return "must not contain white-space";
    if (strstr(p, "//"))
        return "must not contain double slash";
    const char *star = strchr(p, '*');
    size_t len = strlen(p);
    if (star && (strchr(star + 1, '*') || len < 2 || strcmp(p + len - 2, "/*") != 0))
        return "wildcard can only do suffix matching";
    return NULL;
}

static void validate_non_resource_rule(const json_t *rule, const char *at,
                                       struct ck_field_errors *errs)
{
    char path[192];
    check_verbs(rule, at, errs);
    const json_t *urls = json_object_get(rule, "nonResourceURLs");
    snprintf(path, sizeof(path), "%s.nonResourceURLs", at);
    if (!check_list(urls, path, "nonResourceURLs must contain at least one value",
                    "non-resource URLs", errs))
        return;
    size_t i;
    const json_t *u;
    json_array_foreach(urls, i, u)
    {
        const char *url = json_is_string(u) ? json_string_value(u) : "";
        const char *why = bad_url(url);
        snprintf(path, sizeof(path), "%s.nonResourceURLs[%zu]", at, i);
        if (why)
            ck_field_errors_add(errs, CK_FIELD_INVALID, path, url, true, "%s", why);
    }
}

static void validate_resource_rule(const json_t *rule, const char *at, struct ck_field_errors *errs)
{
    char path[192];
    check_verbs(rule, at, errs);
    snprintf(path, sizeof(path), "%s.apiGroups", at);
    check_list(json_object_get(rule, "apiGroups"), path,
               "resource rules must supply at least one api group", "api groups", errs);
    snprintf(path, sizeof(path), "%s.resources", at);
    check_list(json_object_get(rule, "resources"), path,
               "resource rules must supply at least one resource", "resources", errs);
    const json_t *namespaces = json_object_get(rule, "namespaces");
    snprintf(path, sizeof(path), "%s.namespaces", at);
    if (json_array_size(namespaces) == 0) {
        if (!json_is_true(json_object_get(rule, "clusterScope")))
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, path, NULL, false,
                                "resource rules that are not cluster scoped must supply at "
                                "least one namespace");
        return;
    }
    if (!check_list(namespaces, path, "", "namespaces", errs))
        return;
    size_t i;
    const json_t *ns;
    json_array_foreach(namespaces, i, ns)
    {
        struct ck_field_errors why = {0};
        const char *name = json_is_string(ns) ? json_string_value(ns) : "";
        snprintf(path, sizeof(path), "%s.namespaces[%zu]", at, i);
        ck_validate_dns1123_label(name, path, &why);
        for (size_t k = 0; k < why.len; k++)
            ck_field_errors_add(errs, CK_FIELD_INVALID, path, name, true,
                                "each member of this list must be '*' or a DNS-1123 label; %s",
                                why.items[k].detail ? why.items[k].detail : "");
        errs->nomem |= why.nomem;
        ck_field_errors_release(&why);
    }
}

/* A subject's member of another kind than its own is forbidden. */
static void forbid(const json_t *subject, const char *member, const char *own, const char *at,
                   struct ck_field_errors *errs)
{
    static const struct {
        const char *member, *kind;
    } kinds[] = {{"user", "User"}, {"group", "Group"}, {"serviceAccount", "ServiceAccount"}};
    char path[160];
    if (strcmp(member, own) == 0 || !json_object_get(subject, member) ||
        json_is_null(json_object_get(subject, member)))
        return;
    for (size_t i = 0; i < CK__COUNT(kinds); i++)
        if (strcmp(kinds[i].member, member) == 0) {
            snprintf(path, sizeof(path), "%s.%s", at, member);
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, path, NULL, false,
                                "%s is forbidden when subject kind is not '%s'", member,
                                kinds[i].kind);
        }
}

static void validate_subject(const json_t *subject, const char *at, struct ck_field_errors *errs)
{
    char path[160];
    const char *kind = ck__str_at(subject, "kind");
    const char *own = !kind                                 ? NULL
                      : strcmp(kind, "ServiceAccount") == 0 ? "serviceAccount"
                      : strcmp(kind, "User") == 0           ? "user"
                      : strcmp(kind, "Group") == 0          ? "group"
                                                            : NULL;
    if (!own) {
        snprintf(path, sizeof(path), "%s.kind", at);
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, path, kind ? kind : "", true,
                            "supported values: \"Group\", \"ServiceAccount\", \"User\"");
        return;
    }
    const json_t *who = json_object_get(subject, own);
    snprintf(path, sizeof(path), "%s.%s", at, own);
    if (!json_is_object(who)) {
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, path, NULL, false,
                            "%s is required when subject kind is '%s'", own, kind);
    } else {
        const char *name = ck__str_at(who, "name");
        snprintf(path, sizeof(path), "%s.%s.name", at, own);
        if (!name || !*name)
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, path, NULL, false, NULL);
        else if (strcmp(own, "serviceAccount") == 0 && strcmp(name, "*") != 0)
            ck_validate_dns1123_subdomain(name, path, errs);
        if (strcmp(own, "serviceAccount") == 0) {
            const char *ns = ck__str_at(who, "namespace");
            snprintf(path, sizeof(path), "%s.serviceAccount.namespace", at);
            if (ns && *ns)
                ck_validate_dns1123_label(ns, path, errs);
            else
                ck_field_errors_add(errs, CK_FIELD_REQUIRED, path, NULL, false,
                                    "must specify namespace for service account");
        }
    }
    forbid(subject, "user", own, at, errs);
    forbid(subject, "group", own, at, errs);
    forbid(subject, "serviceAccount", own, at, errs);
}

static void validate_rule(const json_t *rule, const char *at, struct ck_field_errors *errs)
{
    char path[128];
    const json_t *subjects = json_object_get(rule, "subjects");
    const json_t *resource = json_object_get(rule, "resourceRules");
    const json_t *non_resource = json_object_get(rule, "nonResourceRules");
    size_t i;
    const json_t *item;
    if (json_array_size(subjects) == 0) {
        snprintf(path, sizeof(path), "%s.subjects", at);
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, path, NULL, false,
                            "subjects must contain at least one value");
    }
    json_array_foreach(subjects, i, item)
    {
        snprintf(path, sizeof(path), "%s.subjects[%zu]", at, i);
        validate_subject(item, path, errs);
    }
    if (json_array_size(resource) == 0 && json_array_size(non_resource) == 0)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, at, NULL, false,
                            "at least one of resourceRules and nonResourceRules has to be "
                            "non-empty");
    json_array_foreach(resource, i, item)
    {
        snprintf(path, sizeof(path), "%s.resourceRules[%zu]", at, i);
        validate_resource_rule(item, path, errs);
    }
    json_array_foreach(non_resource, i, item)
    {
        snprintf(path, sizeof(path), "%s.nonResourceRules[%zu]", at, i);
        validate_non_resource_rule(item, path, errs);
    }
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    (void)old; /* an update is validated as a create */
    const char *name = ck__str_at(obj, "metadata.name");
    const json_t *spec = json_object_get(obj, "spec");
    long long precedence = ck__int_at(spec, "matchingPrecedence");
    char value[32];
    snprintf(value, sizeof(value), "%lld", precedence);
    if (precedence <= 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.matchingPrecedence", value, false,
                            "must be a positive value");
    if (precedence > MAX_MATCHING_PRECEDENCE)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.matchingPrecedence", value, false,
                            "must not be greater than %d", MAX_MATCHING_PRECEDENCE);
    if (precedence == 1 && (!name || strcmp(name, "exempt") != 0))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.matchingPrecedence", value, false,
                            "only the schema named 'exempt' may have matchingPrecedence 1");
    const json_t *method = json_object_get(spec, "distinguisherMethod");
    if (json_is_object(method)) {
        const char *type = ck__str_at(method, "type");
        if (!type || (strcmp(type, "ByNamespace") != 0 && strcmp(type, "ByUser") != 0)) {
            char text[160];
            snprintf(text, sizeof(text), "&flowcontrol.FlowDistinguisherMethod{Type:\"%s\"}",
                     type ? type : "");
            ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, "spec.distinguisherMethod.type", text,
                                false, "supported values: \"ByNamespace\", \"ByUser\"");
        }
    }
    const char *level = ck__str_at(spec, "priorityLevelConfiguration.name");
    if (level && *level)
        ck_validate_dns1123_subdomain(level, "spec.priorityLevelConfiguration.name", errs);
    else
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.priorityLevelConfiguration.name", NULL,
                            false, "must reference a priority level");
    size_t i;
    const json_t *rule;
    char path[64];
    json_array_foreach(json_object_get(spec, "rules"), i, rule)
    {
        snprintf(path, sizeof(path), "spec.rules[%zu]", i);
        validate_rule(rule, path, errs);
    }
    ck__apf_validate_mandatory(obj, "flowSchemas", NULL, errs);
    ck__apf_validate_conditions(obj, errs);
}

enum {
    COL_NAME,
    COL_PRIORITY_LEVEL,
    COL_MATCHING_PRECEDENCE,
    COL_DISTINGUISHER_METHOD,
    COL_AGE,
    COL_MISSING_PL,
};

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    const char *missing = "?";
    size_t i;
    const json_t *c;
    json_array_foreach(ck__json_path(obj, "status.conditions"), i, c)
    {
        const char *type = ck__str_at(c, "type");
        if (type && strcmp(type, "Dangling") == 0) {
            const char *status = ck__str_at(c, "status");
            missing = status ? status : "";
            break;
        }
    }
    cells[COL_DISTINGUISHER_METHOD] =
        json_string(ck__or_none(ck__str_at(obj, "spec.distinguisherMethod.type")));
    cells[COL_MISSING_PL] = json_string(missing);
}

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_PRIORITY_LEVEL] = {"PriorityLevel", "string", "",
                            "The priority level the matching requests are given.", 0,
                            ".spec.priorityLevelConfiguration.name", CK_CELL_ABSENT_EMPTY, false},
    [COL_MATCHING_PRECEDENCE] = {"MatchingPrecedence", "string", "",
                                 "Lower numbers are matched first.", 0, ".spec.matchingPrecedence",
                                 CK_CELL_ABSENT_ZERO, false},
    [COL_DISTINGUISHER_METHOD] =
        CK__COMPUTED_COLUMN("DistinguisherMethod", "string",
                            "How the requests of the schema are told apart into flows.", 0),
    [COL_AGE] = CK__AGE_COLUMN,
    [COL_MISSING_PL] =
        CK__COMPUTED_COLUMN("MissingPL", "string", "Whether the priority level is missing.", 0),
};

const struct ck_kind ck__kind_flowschema = {
    CK__APF_KIND_COMMON,
    .kind = "FlowSchema",
    .list_kind = "FlowSchemaList",
    .resource = "flowschemas",
    .singular = "flowschema",
    .schema = "io.k8s.api.flowcontrol.v1.FlowSchema",
    .columns = columns,
    .n_columns = CK__COUNT(columns),
    .cells = cells,
    .defaults = defaults,
    .validate = validate,
};
