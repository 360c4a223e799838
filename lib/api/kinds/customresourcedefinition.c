/*
 * customresourcedefinition.c - the CustomResourceDefinition kind
 * (apiextensions.k8s.io/v1, cluster-scoped): how users add kinds at run time.
 *
 * Mirrors apiextensions-apiserver's pkg/registry/customresourcedefinition
 * (strategy.go, etcd.go) and pkg/apis/apiextensions (defaults and
 * validation): the name is <plural>.<group>, the group a domain with a dot,
 * the scope Cluster or Namespaced and immutable, exactly one storage
 * version, unique version names, names that are DNS-1035 labels. Defaults:
 * singular is the lower-cased kind, listKind <kind>List, conversion None.
 * A conversion webhook (strategy Webhook) needs a clientConfig (a url or a
 * service), a recognised conversionReviewVersion and preserveUnknownFields
 * false; under None its settings are forbidden.
 * On create the status is cleared and storedVersions holds the storage
 * version; an update adds a new storage version to it. The first delete adds
 * the finalizer customresourcecleanup.apiextensions.k8s.io and the
 * Terminating condition (Kubernetes' REST Delete does so): the server's CRD
 * controller (lib/apiserver/crd.c) deletes the custom resources, then the
 * finalizer, and the definition goes.
 *
 * validate() runs the structural checks of each version's openAPIV3Schema
 * (ck_crd_schema_check, lib/api/structural.c; named spec.validation.
 * openAPIV3Schema when every version has the same, as Kubernetes' internal
 * form holds it then), which compile its CEL rules
 * (x-kubernetes-validations); custom resources are validated by them
 * (lib/api/celrules.c).
 *
 * kubectl prints NAME and CREATED AT, as Kubernetes' default table does.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 * Tests: tests/api/test_customresource.c, tests/e2e/test_crd.sh.
 */
#define _GNU_SOURCE /* memmem */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../internal.h"

#define CLEANUP_FINALIZER "customresourcecleanup.apiextensions.k8s.io"
#define GROUP_MAX         63 /* bytes of an API group ckube routes */
#define VERSION_MAX       31 /* bytes of an API version ckube routes */

static const char dns1035_msg[] =
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/* IsDNS1035Label on value (lower-cased first when fold), errors under field with prefix. */
static void check_dns1035(const char *value, bool fold, const char *field, const char *prefix,
                          struct ck_field_errors *errs)
{
    size_t len = strlen(value);
    bool ok = len > 0 && len <= 63;
    for (size_t i = 0; ok && i < len; i++) {
        char c = fold ? (char)tolower((unsigned char)value[i]) : value[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (i == 0)
            ok = c >= 'a' && c <= 'z';
        else if (i == len - 1)
            ok = alnum;
        else
            ok = alnum || c == '-';
    }
    if (len > 63)
        ck_field_errors_add(errs, CK_FIELD_INVALID, field, value, true,
                            "%smust be no more than 63 characters", prefix);
    if (!ok && len > 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, field, value, true, "%s%s", prefix,
                            dns1035_msg);
}

static void check_name_list(const json_t *list, const char *field, struct ck_field_errors *errs)
{
    size_t i;
    const json_t *v;
    json_array_foreach(list, i, v)
    {
        char path[96];
        snprintf(path, sizeof(path), "%s[%zu]", field, i);
        check_dns1035(json_string_value(v) ? json_string_value(v) : "", false, path, "", errs);
    }
}

/* ValidateCustomResourceDefinitionNames and the names a spec requires. */
static void validate_names(const json_t *names, struct ck_field_errors *errs)
{
    static const struct {
        const char *member;
        bool fold;
    } rules[] = {{"plural", false}, {"singular", false}, {"kind", true}, {"listKind", true}};
    for (size_t i = 0; i < CK__COUNT(rules); i++) {
        char field[64];
        snprintf(field, sizeof(field), "spec.names.%s", rules[i].member);
        const char *v = json_string_value(json_object_get(names, rules[i].member));
        if (!v || !*v)
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, field, NULL, false, NULL);
        else
            check_dns1035(v, rules[i].fold, field,
                          rules[i].fold ? "may have mixed case, but should otherwise match: " : "",
                          errs);
    }
    const char *kind = json_string_value(json_object_get(names, "kind"));
    const char *list_kind = json_string_value(json_object_get(names, "listKind"));
    if (kind && *kind && list_kind && strcmp(kind, list_kind) == 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.names.listKind", list_kind, true,
                            "kind and listKind may not be the same");
    check_name_list(json_object_get(names, "shortNames"), "spec.names.shortNames", errs);
    check_name_list(json_object_get(names, "categories"), "spec.names.categories", errs);
}

/* A DNS-1035 label: lower case letters, digits and '-', a letter first, no '-' last. */
static bool dns1035_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || !(s[0] >= 'a' && s[0] <= 'z') || s[n - 1] == '-')
        return false;
    return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
}

/* ValidateCABundle: the bundle decodes to at least one PEM certificate. */
static void check_ca_bundle(const char *ca64, struct ck_field_errors *errs)
{
    size_t len = 0;
    char *pem = ck_base64_decode(ca64, &len);
    bool has_cert = pem && memmem(pem, len, "-----BEGIN CERTIFICATE-----", 27) != NULL;
    free(pem);
    if (!has_cert)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.conversion.webhookClientConfig.caBundle",
                            NULL, false,
                            "unable to load root certificates: unable to parse bytes as PEM block");
}

/*
 * validateCustomResourceConversion with a recognised review version required, and the
 * rule that a webhook cannot convert objects whose unknown fields are kept. The paths
 * are kube-apiserver's, which validates its internal type: webhook.clientConfig is
 * reported as spec.conversion.webhookClientConfig, webhook.conversionReviewVersions as
 * spec.conversion.conversionReviewVersions.
 */
static void validate_conversion(const json_t *obj, struct ck_field_errors *errs)
{
    const char *strategy = ck__str_at(obj, "spec.conversion.strategy");
    const json_t *webhook = ck__json_path(obj, "spec.conversion.webhook");
    const json_t *cc = json_object_get(webhook, "clientConfig");
    const json_t *versions = json_object_get(webhook, "conversionReviewVersions");
    if (strategy && strcmp(strategy, "None") != 0 &&
        json_is_true(ck__json_path(obj, "spec.preserveUnknownFields")))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.conversion.strategy", strategy, true,
                            "must be None if spec.preserveUnknownFields is true");
    if (strategy && strcmp(strategy, "None") != 0 && strcmp(strategy, "Webhook") != 0) {
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, "spec.conversion.strategy", strategy,
                            true, "supported values: \"None\", \"Webhook\"");
        return;
    }
    if (!strategy || strcmp(strategy, "None") == 0) {
        if (cc)
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "spec.conversion.webhookClientConfig",
                                NULL, false,
                                "should not be set when strategy is not set to Webhook");
        if (json_array_size(versions))
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN,
                                "spec.conversion.conversionReviewVersions", NULL, false,
                                "should not be set when strategy is not set to Webhook");
        return;
    }
    const char *url = json_string_value(json_object_get(cc, "url"));
    const json_t *service = json_object_get(cc, "service");
    if (!cc)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.conversion.webhookClientConfig", NULL,
                            false, "required when strategy is set to Webhook");
    else if (!url == !service)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.conversion.webhookClientConfig", NULL,
                            false, "exactly one of url or service is required");
    else if (url)
        ck__validate_webhook_url(url, "spec.conversion.webhookClientConfig.url", errs);
    else
        ck__validate_webhook_service(service, "spec.conversion.webhookClientConfig.service", errs);
    const char *ca = json_string_value(json_object_get(cc, "caBundle"));
    if (ca && *ca)
        check_ca_bundle(ca, errs);
    /* validateConversionReviewVersions */
    static const char f[] = "spec.conversion.conversionReviewVersions";
    if (json_array_size(versions) == 0) {
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false, "%s", "");
        return;
    }
    bool known = false;
    size_t i;
    const json_t *v;
    char fi[sizeof(f) + 24];
    json_array_foreach(versions, i, v)
    {
        const char *s = json_string_value(v) ? json_string_value(v) : "";
        snprintf(fi, sizeof(fi), "%s[%zu]", f, i);
        bool dup = false;
        for (size_t j = 0; j < i; j++)
            dup |= json_equal(json_array_get(versions, j), v);
        if (dup) {
            ck_field_errors_add(errs, CK_FIELD_INVALID, fi, s, true, "duplicate version");
            continue;
        }
        if (!dns1035_label(s))
            ck_field_errors_add(
                errs, CK_FIELD_INVALID, fi, s, true,
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                "start with an alphabetic character, and end with an alphanumeric character "
                "(e.g. 'my-name',  or 'abc-123', regex used for validation is "
                "'[a-z]([-a-z0-9]*[a-z0-9])?')");
        known |= strcmp(s, "v1") == 0 || strcmp(s, "v1beta1") == 0;
    }
    if (!known) {
        /* the value as Go's %#v prints a []string */
        char text[512] = "[]string{";
        size_t used = strlen(text);
        json_array_foreach(versions, i, v)
        {
            int w = snprintf(text + used, sizeof(text) - used, "%s\"%s\"", i ? ", " : "",
                             json_string_value(v) ? json_string_value(v) : "");
            if (w < 0 || (size_t)w >= sizeof(text) - used - 1)
                break;
            used += (size_t)w;
        }
        snprintf(text + used, sizeof(text) - used, "}");
        ck_field_errors_add(errs, CK_FIELD_INVALID, f, text, false,
                            "must include at least one of v1, v1beta1");
    }
}

/* A scale path: a simple JSON path under prefix (".spec." or ".status."). */
static void check_scale_path(const json_t *scale, const char *member, const char *prefix,
                             const char *base, bool required, struct ck_field_errors *errs)
{
    char field[160];
    snprintf(field, sizeof(field), "%s.scale.%s", base, member);
    const char *v = json_string_value(json_object_get(scale, member));
    if (!v || !*v) {
        if (required)
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, field, NULL, false, NULL);
    } else if (v[0] != '.') {
        ck_field_errors_add(errs, CK_FIELD_INVALID, field, v, true,
                            "must be a simple json path starting with .");
    } else if (strncmp(v, prefix, strlen(prefix)) != 0 &&
               !(strcmp(member, "labelSelectorPath") == 0 && strncmp(v, ".spec.", 6) == 0)) {
        ck_field_errors_add(errs, CK_FIELD_INVALID, field, v, true,
                            "should be a json path under %.*s", (int)strlen(prefix) - 1, prefix);
    }
}

/*
 * True when every version has the same schema: Kubernetes' internal form then
 * holds it once, as spec.validation, and its errors are named from there.
 */
static bool schemas_identical(const json_t *versions)
{
    const json_t *first = json_object_get(json_array_get(versions, 0), "schema");
    size_t i;
    const json_t *v;
    json_array_foreach(versions, i, v)
    {
        const json_t *schema = json_object_get(v, "schema");
        if (!(schema == first || (schema && first && json_equal(schema, first))))
            return false;
    }
    return true;
}

/* i: the version's index; shared: every version has the same schema (checked once, at 0). */
static void validate_version(const json_t *v, size_t i, bool shared, struct ck_field_errors *errs)
{
    char base[96];
    snprintf(base, sizeof(base), "spec.versions[%zu]", i);
    char field[160];
    snprintf(field, sizeof(field), "%s.name", base);
    const char *name = json_string_value(json_object_get(v, "name"));
    check_dns1035(name ? name : "", false, field, "", errs);
    if (!name || !*name)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, field, NULL, false, NULL);
    else if (strlen(name) > VERSION_MAX) /* ckube's routes hold 31 (docs/limits.md) */
        ck_field_errors_add(errs, CK_FIELD_TOO_LONG, field, name, true,
                            "may not be more than %d bytes", VERSION_MAX);
    const json_t *schema = json_object_get(json_object_get(v, "schema"), "openAPIV3Schema");
    snprintf(field, sizeof(field), "%s.schema.openAPIV3Schema", base);
    if (!json_is_object(schema))
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, field, NULL, false, "schemas are required");
    else if (!shared) /* structural rules and CEL, lib/api/structural.c */
        ck_crd_schema_check(schema, field, errs);
    else if (i == 0)
        ck_crd_schema_check(schema, "spec.validation.openAPIV3Schema", errs);
    const json_t *subs = json_object_get(v, "subresources");
    const json_t *scale = json_object_get(subs, "scale");
    snprintf(field, sizeof(field), "%s.subresources", base);
    if (json_is_object(scale)) {
        check_scale_path(scale, "specReplicasPath", ".spec.", field, true, errs);
        check_scale_path(scale, "statusReplicasPath", ".status.", field, true, errs);
        check_scale_path(scale, "labelSelectorPath", ".status.", field, false, errs);
    }
    ck_crd_selectable_fields_check(v, base, errs);
    size_t j;
    const json_t *col;
    json_array_foreach(json_object_get(v, "additionalPrinterColumns"), j, col)
    {
        static const char *const types[] = {"integer", "number", "string", "boolean", "date"};
        char cf[200];
        snprintf(cf, sizeof(cf), "%s.additionalPrinterColumns[%zu]", base, j);
        const char *type = json_string_value(json_object_get(col, "type"));
        bool known = false;
        for (size_t t = 0; type && t < CK__COUNT(types); t++)
            known = known || strcmp(type, types[t]) == 0;
        char tf[220];
        snprintf(tf, sizeof(tf), "%s.type", cf);
        if (!type || !*type)
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, tf, NULL, false, NULL);
        else if (!known)
            ck_field_errors_add(
                errs, CK_FIELD_NOT_SUPPORTED, tf, type, true,
                "supported values: \"boolean\", \"date\", \"integer\", \"number\", \"string\"");
        snprintf(tf, sizeof(tf), "%s.jsonPath", cf);
        const char *path = json_string_value(json_object_get(col, "jsonPath"));
        if (!path || !*path)
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, tf, NULL, false, NULL);
        else if (path[0] != '.')
            ck_field_errors_add(errs, CK_FIELD_INVALID, tf, path, true,
                                "must be a simple json path starting with .");
    }
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    const json_t *spec = json_object_get(obj, "spec");
    const char *name = ck__str_at(obj, "metadata.name");
    const char *group = json_string_value(json_object_get(spec, "group"));
    const json_t *names = json_object_get(spec, "names");
    const char *plural = json_string_value(json_object_get(names, "plural"));
    char expected[512];
    snprintf(expected, sizeof(expected), "%s.%s", plural ? plural : "", group ? group : "");
    if (name && strcmp(name, expected) != 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "metadata.name", name, true,
                            "must be spec.names.plural+\".\"+spec.group");

    if (!group || !*group)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.group", NULL, false, NULL);
    else if (ck_validate_dns1123_subdomain(group, "spec.group", errs) && !strchr(group, '.'))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.group", group, true,
                            "should be a domain with at least one dot");
    else if (strlen(group) > GROUP_MAX) /* ckube's routes hold 63 (docs/limits.md) */
        ck_field_errors_add(errs, CK_FIELD_TOO_LONG, "spec.group", group, true,
                            "may not be more than %d bytes", GROUP_MAX);

    const char *scope = json_string_value(json_object_get(spec, "scope"));
    if (!scope || !*scope)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.scope", NULL, false, NULL);
    else if (strcmp(scope, "Cluster") != 0 && strcmp(scope, "Namespaced") != 0)
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, "spec.scope", scope, true,
                            "supported values: \"Cluster\", \"Namespaced\"");

    const json_t *versions = json_object_get(spec, "versions");
    size_t storage = 0, i;
    bool unique = true, shared = schemas_identical(versions);
    const json_t *v;
    json_array_foreach(versions, i, v)
    {
        if (json_is_true(json_object_get(v, "storage")))
            storage++;
        const char *vn = json_string_value(json_object_get(v, "name"));
        for (size_t j = 0; vn && j < i; j++) {
            const char *other =
                json_string_value(json_object_get(json_array_get(versions, j), "name"));
            if (other && strcmp(vn, other) == 0)
                unique = false;
        }
        validate_version(v, i, shared, errs);
    }
    if (json_array_size(versions) == 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.versions", NULL, false,
                            "must have exactly one version marked as storage version");
    else if (!unique)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.versions", NULL, false,
                            "must contain unique version names");
    if (json_array_size(versions) > 0 && storage != 1)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.versions", NULL, false,
                            "must have exactly one version marked as storage version");
    validate_names(names, errs);

    validate_conversion(obj, errs);

    /* ValidateCustomResourceDefinitionStoredVersions */
    const json_t *stored = ck__json_path(obj, "status.storedVersions");
    json_array_foreach(stored, i, v)
    {
        const char *sv = json_string_value(v);
        bool found = false;
        size_t j;
        const json_t *w;
        json_array_foreach(versions, j, w)
        {
            const char *vn = json_string_value(json_object_get(w, "name"));
            found = found || (sv && vn && strcmp(sv, vn) == 0);
        }
        if (!found) {
            char field[64];
            snprintf(field, sizeof(field), "status.storedVersions[%zu]", i);
            ck_field_errors_add(errs, CK_FIELD_INVALID, field, sv ? sv : "", true,
                                "must appear in spec.versions");
        }
    }

    if (old) {
        const char *old_scope = ck__str_at(old, "spec.scope");
        if (scope && old_scope && strcmp(scope, old_scope) != 0)
            ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.scope", scope, true,
                                "field is immutable");
        const char *old_group = ck__str_at(old, "spec.group");
        if (group && old_group && strcmp(group, old_group) != 0)
            ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.group", group, true,
                                "field is immutable");
    }
}

/* SetDefaults: singular, listKind, conversion strategy. */
static int defaults(json_t *obj)
{
    json_t *spec = json_object_get(obj, "spec");
    json_t *names = json_object_get(spec, "names");
    const char *kind = json_string_value(json_object_get(names, "kind"));
    int failed = 0;
    if (json_is_object(names) && kind && *kind) {
        if (!json_string_length(json_object_get(names, "singular"))) {
            char lower[256];
            snprintf(lower, sizeof(lower), "%s", kind);
            for (char *p = lower; *p; p++)
                *p = (char)tolower((unsigned char)*p);
            failed |= json_object_set_new(names, "singular", json_string(lower));
        }
        if (!json_string_length(json_object_get(names, "listKind"))) {
            char list[300];
            snprintf(list, sizeof(list), "%sList", kind);
            failed |= json_object_set_new(names, "listKind", json_string(list));
        }
    }
    if (json_is_object(spec) && !json_object_get(spec, "conversion"))
        failed |= json_object_set_new(spec, "conversion", json_pack("{s:s}", "strategy", "None"));
    return failed ? CK_ENOMEM : 0;
}

static const char *storage_version(const json_t *obj)
{
    size_t i;
    const json_t *v;
    json_array_foreach(ck__json_path(obj, "spec.versions"), i, v)
    {
        if (json_is_true(json_object_get(v, "storage")))
            return json_string_value(json_object_get(v, "name"));
    }
    return NULL;
}

/* Adds the storage version to status.storedVersions when it is not there yet. */
static int record_stored_version(json_t *obj)
{
    const char *storage = storage_version(obj);
    if (!storage)
        return 0;
    json_t *status = ck__object_at(obj, "status");
    json_t *stored = json_object_get(status, "storedVersions");
    if (!json_is_array(stored)) {
        stored = json_array();
        if (json_object_set_new(status, "storedVersions", stored) < 0)
            return CK_ENOMEM;
    }
    size_t i;
    const json_t *v;
    json_array_foreach(stored, i, v)
    {
        if (json_string_value(v) && strcmp(json_string_value(v), storage) == 0)
            return 0;
    }
    return json_array_append_new(stored, json_string(storage)) < 0 ? CK_ENOMEM : 0;
}

static int prepare_for_create(json_t *obj)
{
    if (json_object_set_new(obj, "status", json_object()) < 0)
        return CK_ENOMEM;
    return record_stored_version(obj);
}

static int prepare_for_update(json_t *obj, const json_t *old)
{
    (void)old;
    return record_stored_version(obj);
}

/* The first delete: the cleanup finalizer and the Terminating condition (REST Delete). */
static int prepare_for_delete(json_t *obj)
{
    json_t *meta = ck__object_at(obj, "metadata");
    json_t *finalizers = json_object_get(meta, "finalizers");
    if (!json_is_array(finalizers)) {
        finalizers = json_array();
        if (json_object_set_new(meta, "finalizers", finalizers) < 0)
            return CK_ENOMEM;
    }
    bool has = false;
    size_t i;
    const json_t *f;
    json_array_foreach(finalizers, i, f)
    {
        has = has || (json_string_value(f) && strcmp(json_string_value(f), CLEANUP_FINALIZER) == 0);
    }
    if (!has && json_array_append_new(finalizers, json_string(CLEANUP_FINALIZER)) < 0)
        return CK_ENOMEM;
    json_t *status = ck__object_at(obj, "status");
    json_t *conditions = json_object_get(status, "conditions");
    if (!json_is_array(conditions)) {
        conditions = json_array();
        if (json_object_set_new(status, "conditions", conditions) < 0)
            return CK_ENOMEM;
    }
    json_t *c;
    for (i = json_array_size(conditions); i-- > 0;) {
        c = json_array_get(conditions, i);
        const char *type = json_string_value(json_object_get(c, "type"));
        if (type && strcmp(type, "Terminating") == 0)
            json_array_remove(conditions, i);
    }
    char now[32];
    ck_rfc3339(time(NULL), now, sizeof(now));
    c = json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", "Terminating", "status", "True",
                  "lastTransitionTime", now, "reason", "InstanceDeletionPending", "message",
                  "CustomResourceDefinition marked for deletion; CustomResource deletion will "
                  "begin soon");
    return json_array_append_new(conditions, c) < 0 ? CK_ENOMEM : 0;
}

static const struct ck_table_column columns[] = {
    CK__NAME_COLUMN(0),
    CK__CREATED_AT_COLUMN,
};

static const char *const short_names[] = {"crd", "crds", NULL};
static const char *const categories[] = {"api-extensions", NULL};
static const char *const status_keeps[] = {"labels", "annotations", "ownerReferences", NULL};

const struct ck_kind ck__kind_customresourcedefinition = {
    .group = "apiextensions.k8s.io",
    .version = "v1",
    .kind = "CustomResourceDefinition",
    .list_kind = "CustomResourceDefinitionList",
    .resource = "customresourcedefinitions",
    .singular = "customresourcedefinition",
    .short_names = short_names,
    .categories = categories,
    .namespaced = false,
    .has_generation = true,
    .schema = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
    CK__KIND_SUBRESOURCES(ck__status_subresource),
    .status_keeps_metadata = status_keeps,
    CK__KIND_COLUMNS(columns),
    .cells = ck__cells_created_at,
    .prepare_for_create = prepare_for_create,
    .prepare_for_update = prepare_for_update,
    .defaults = defaults,
    .validate = validate,
    .prepare_for_delete = prepare_for_delete,
};
