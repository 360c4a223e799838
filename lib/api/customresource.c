/*
 * customresource.c - the kinds a CustomResourceDefinition describes: one
 * struct ck_kind per served version, built at run time from the CRD object.
 *
 * Mirrors what apiextensions-apiserver derives from a CRD when it serves it
 * (pkg/apiserver/customresource_handler.go, crdInfo): names from
 * status.acceptedNames (spec.names until the naming controller accepted
 * them), one schema per version built from its openAPIV3Schema with
 * apiVersion, kind and metadata added (pkg/controller/openapi/builder), the
 * status and scale subresources, the printer columns (a Name column, then
 * additionalPrinterColumns up to the first whose jsonPath does not parse,
 * or Age when there are none:
 * pkg/registry/customresource/tableconvertor), and the storage version every
 * version's objects are stored in (conversion None: only apiVersion changes;
 * conversion Webhook: every kind carries spec.conversion.webhook, which the
 * API server calls, lib/apiserver/conversion.c).
 * A version's selectableFields are its kind's field labels (field selectors
 * on list and watch, CustomResourceFieldSelectors, GA in 1.32).
 * Each version's x-kubernetes-validations rules are compiled here, once
 * (ck_crd_rules_new(), lib/api/celrules.c), and evaluated on every write.
 * Objects read from storage get their version's schema defaults, as
 * Kubernetes' decoder applies them (ck_crd_default_stored()).
 *
 * Everything a CRD's kinds point to lives in one allocation per string plus
 * the set of its schemas, layered over the built-in set so that ObjectMeta
 * and its friends are not copied: a CRD costs a few kilobytes plus its schema.
 * Once a kind is registered, readers may hold it until the process exits, so
 * the caller keeps registered kinds forever (ck_crd_kinds_free() is for
 * kinds never registered).
 *
 * Versions are ordered as Kubernetes orders them for discovery
 * (version.CompareKubeAwareVersionStrings): GA before beta before alpha, the
 * higher major and minor first, other names last in alphabetical order, so
 * the first registered version is the group's preferred one.
 *
 * Threading: pure functions over their arguments; the result is immutable.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"
#include "internal.h"

#define OBJECT_META "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
#define LIST_META   "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
#define REF_PREFIX  "#/components/schemas/"

/* One served version's descriptor and what it points to. */
struct crd_kind {
    struct ck_kind kind;
    struct ck_subresource subresources[2];
    struct ck_table_column *columns;
    struct ck_field_label *field_labels; /* the version's selectableFields */
    struct ck_schemas *schemas;
    struct ck_crd_rules *rules; /* the version's x-kubernetes-validations, compiled */
};

struct ck_crd_kinds {
    struct crd_kind *kinds;
    size_t n;
    char **strings; /* every string (and list of them) the descriptors point to */
    size_t n_strings;
    json_t *conversion_webhook; /* spec.conversion.webhook under strategy Webhook, else NULL */
};

static const char *const status_keeps[] = {"labels", "annotations", "finalizers", "ownerReferences",
                                           NULL};

/* ---- version priority --------------------------------------------------- */

/* A kube-like version: v<major>[(alpha|beta)<minor>]; 0 otherwise. */
static bool parse_kube_version(const char *v, int *ret_major, int *ret_stage, int *ret_minor)
{
    if (v[0] != 'v' || !isdigit((unsigned char)v[1]))
        return false;
    char *end;
    long major = strtol(v + 1, &end, 10);
    int stage = 2; /* GA */
    long minor = 0;
    if (*end) {
        if (strncmp(end, "beta", 4) == 0)
            stage = 1, end += 4;
        else if (strncmp(end, "alpha", 5) == 0)
            stage = 0, end += 5;
        else
            return false;
        if (!isdigit((unsigned char)*end))
            return false;
        minor = strtol(end, &end, 10);
        if (*end)
            return false;
    }
    *ret_major = (int)major;
    *ret_stage = stage;
    *ret_minor = (int)minor;
    return true;
}

int ck_crd_version_compare(const char *a, const char *b)
{
    int am, as, an, bm, bs, bn;
    bool ak = parse_kube_version(a, &am, &as, &an);
    bool bk = parse_kube_version(b, &bm, &bs, &bn);
    if (ak != bk)
        return ak ? -1 : 1;
    if (!ak)
        return strcmp(a, b);
    if (as != bs)
        return bs - as;
    if (am != bm)
        return bm - am;
    return bn - an;
}

/* ---- building ----------------------------------------------------------- */

static const char *keep(struct ck_crd_kinds *k, const char *s)
{
    char **strings = realloc(k->strings, (k->n_strings + 1) * sizeof(*strings));
    if (!strings)
        return NULL;
    k->strings = strings;
    char *copy = strdup(s ? s : "");
    if (copy)
        k->strings[k->n_strings++] = copy;
    return copy;
}

static const char *keepf(struct ck_crd_kinds *k, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static const char *keepf(struct ck_crd_kinds *k, const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    const char *kept = keep(k, s);
    free(s);
    return kept;
}

/* A NULL-terminated copy of an array of strings, or NULL when it is empty. */
static const char *const *keep_list(struct ck_crd_kinds *k, const json_t *array, bool *failed)
{
    size_t n = json_array_size(array);
    if (n == 0)
        return NULL;
    const char **list = calloc(n + 1, sizeof(*list));
    if (!list) {
        *failed = true;
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        list[i] = keep(k, json_string_value(json_array_get(array, i)));
        if (!list[i])
            *failed = true;
    }
    /* kept with the strings so that ck_crd_kinds_free() finds it */
    char **strings = realloc(k->strings, (k->n_strings + 1) * sizeof(*strings));
    if (!strings) {
        free(list);
        *failed = true;
        return NULL;
    }
    k->strings = strings;
    k->strings[k->n_strings++] = (char *)list;
    return list;
}

/* "stable.example.com" -> "com.example.stable", as Kubernetes names CRD schemas. */
static void reversed_group(const char *group, char *buf, size_t size)
{
    buf[0] = '\0';
    size_t len = strlen(group);
    size_t end = len;
    for (size_t i = len + 1; i-- > 0;) {
        if (i == 0 || group[i - 1] == '.') {
            size_t used = strlen(buf);
            snprintf(buf + used, size - used, "%s%.*s", used ? "." : "", (int)(end - i), group + i);
            end = i ? i - 1 : 0;
        }
    }
}

/*
 * The kind's schema document: the version's openAPIV3Schema (or an object
 * keeping every field when it has none) with apiVersion, kind and metadata,
 * marked as a custom resource; and the list's.
 */
static json_t *schema_document(const char *name, const char *list_name, const json_t *open_api,
                               const char *group, const char *version, const char *kind,
                               const char *list_kind)
{
    json_t *schema = json_is_object(open_api)
                         ? ck__json_copy(open_api)
                         : json_pack("{s:s, s:b}", "type", "object",
                                     "x-kubernetes-preserve-unknown-fields", true);
    if (!schema)
        return NULL;
    json_t *props = json_object_get(schema, "properties");
    if (!json_is_object(props)) {
        props = json_object();
        json_object_set_new(schema, "properties", props);
    }
    int failed = !props;
    failed |= json_object_set_new(props, "apiVersion", json_pack("{s:s}", "type", "string"));
    failed |= json_object_set_new(props, "kind", json_pack("{s:s}", "type", "string"));
    failed |=
        json_object_set_new(props, "metadata", json_pack("{s:s}", "$ref", REF_PREFIX OBJECT_META));
    if (!json_object_get(schema, "type"))
        failed |= json_object_set_new(schema, "type", json_string("object"));
    failed |= json_object_set_new(schema, "x-ckube-custom-resource", json_true());
    failed |= json_object_set_new(
        schema, "x-kubernetes-group-version-kind",
        json_pack("[{s:s, s:s, s:s}]", "group", group, "version", version, "kind", kind));
    char item_ref[512];
    snprintf(item_ref, sizeof(item_ref), REF_PREFIX "%s", name);
    json_t *list = json_pack(
        "{s:s, s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s, s:{s:s}}}, s:[s], s:[{s:s, s:s, s:s}]}",
        "description", "List of custom resources.", "type", "object", "properties", "apiVersion",
        "type", "string", "kind", "type", "string", "metadata", "$ref", REF_PREFIX LIST_META,
        "items", "type", "array", "items", "$ref", item_ref, "required", "items",
        "x-kubernetes-group-version-kind", "group", group, "version", version, "kind", list_kind);
    json_t *doc = json_object();
    failed |= !list || !doc;
    failed |= json_object_set_new(doc, name, schema);
    failed |= json_object_set_new(doc, list_name, list);
    if (failed)
        return json_decref(doc), NULL;
    return doc;
}

/* The Name column, then the version's additionalPrinterColumns, or Age when it has none. */
static int build_columns(struct ck_crd_kinds *k, struct crd_kind *ck, const json_t *printer_columns)
{
    size_t n = json_array_size(printer_columns);
    ck->columns = calloc(n + 2, sizeof(*ck->columns));
    if (!ck->columns)
        return CK_ENOMEM;
    struct ck_table_column *c = ck->columns;
    c[0] = (struct ck_table_column){
        "Name", "string", "name", CK__NAME_DOC, 0, ".metadata.name", CK_CELL_ABSENT_NONE, false};
    size_t at = 1;
    if (n == 0) {
        c[at++] = (struct ck_table_column){
            "Age", "date", "", CK__AGE_DOC, 0, ".metadata.creationTimestamp", CK_CELL_ABSENT_NULL,
            true};
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *col = json_array_get(printer_columns, i);
        const char *type = json_string_value(json_object_get(col, "type"));
        const char *path = json_string_value(json_object_get(col, "jsonPath"));
        /* a path that does not parse ends the columns, as Kubernetes' table convertor does */
        if (!path || ck_jsonpath_check(path, NULL) < 0)
            break;
        struct ck_table_column *d = &c[at++];
        d->name = keep(k, json_string_value(json_object_get(col, "name")));
        d->type = keep(k, type ? type : "string");
        d->format = keep(k, json_string_value(json_object_get(col, "format")));
        d->description = keep(k, json_string_value(json_object_get(col, "description")));
        d->priority = (int)json_integer_value(json_object_get(col, "priority"));
        d->json_path = keep(k, path);
        d->absent = CK_CELL_ABSENT_NULL;
        d->age = type && strcmp(type, "date") == 0;
        if (!d->name || !d->type || !d->format || !d->description || !d->json_path)
            return CK_ENOMEM;
    }
    ck->kind.columns = ck->columns;
    ck->kind.n_columns = at;
    return 0;
}

static int build_subresources(struct ck_crd_kinds *k, struct crd_kind *ck, const json_t *subs)
{
    size_t n = 0;
    if (json_object_get(subs, "status"))
        ck->subresources[n++] = (struct ck_subresource)CK__STATUS_SUBRESOURCE;
    const json_t *scale = json_object_get(subs, "scale");
    if (json_is_object(scale)) {
        struct ck_subresource *s = &ck->subresources[n++];
        *s = (struct ck_subresource)CK__SCALE_SUBRESOURCE;
        s->spec_replicas_path =
            keep(k, json_string_value(json_object_get(scale, "specReplicasPath")));
        s->status_replicas_path =
            keep(k, json_string_value(json_object_get(scale, "statusReplicasPath")));
        const char *selector = json_string_value(json_object_get(scale, "labelSelectorPath"));
        s->label_selector_path = selector && *selector ? keep(k, selector) : NULL;
        if (!s->spec_replicas_path || !s->status_replicas_path ||
            (selector && *selector && !s->label_selector_path))
            return CK_ENOMEM;
    }
    ck->kind.subresources = n ? ck->subresources : NULL;
    ck->kind.n_subresources = n;
    ck->kind.status_keeps_metadata = n ? status_keeps : NULL;
    return 0;
}

/*
 * True when a schema holds a `default` anywhere (a property named "default"
 * counts too: it only costs a decode on read).
 */
static bool has_defaults(const json_t *schema)
{
    if (json_is_object(schema)) {
        if (json_object_get(schema, "default"))
            return true;
        const char *key;
        const json_t *value;
        json_object_foreach((json_t *)schema, key, value)
        {
            if (has_defaults(value))
                return true;
        }
    } else if (json_is_array(schema)) {
        size_t i;
        const json_t *value;
        json_array_foreach(schema, i, value)
        {
            if (has_defaults(value))
                return true;
        }
    }
    return false;
}

/* ---- selectableFields --------------------------------------------------- */

/*
 * A selectable field's value as Kubernetes' custom resource strategy gives
 * it: a string as it is, an integer in decimal, a boolean as true or false;
 * "" when absent. The label is the jsonPath without its leading dot, which
 * is also the dotted path to read.
 */
static const char *selectable_value(const char *label, const json_t *obj, char *buf, size_t size)
{
    const json_t *v = ck__json_path(obj, label);
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_integer(v)) {
        snprintf(buf, size, "%lld", (long long)json_integer_value(v));
        return buf;
    }
    if (json_is_boolean(v))
        return json_is_true(v) ? "true" : "false";
    return "";
}

static int build_selectable(struct ck_crd_kinds *k, struct crd_kind *ck, const json_t *fields)
{
    size_t n = json_array_size(fields);
    if (n == 0)
        return 0;
    ck->field_labels = calloc(n, sizeof(*ck->field_labels));
    if (!ck->field_labels)
        return CK_ENOMEM;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        const char *path =
            json_string_value(json_object_get(json_array_get(fields, i), "jsonPath"));
        if (!path || path[0] != '.' || !path[1])
            continue; /* refused by the definition's validation */
        const char *label = keep(k, path + 1);
        if (!label)
            return CK_ENOMEM;
        ck->field_labels[at++] = (struct ck_field_label){label, NULL, CK_FIELD_LABEL_STRING};
    }
    ck->kind.field_labels = ck->field_labels;
    ck->kind.n_field_labels = at;
    ck->kind.field_value = selectable_value;
    return 0;
}

void ck_crd_selectable_fields_check(const json_t *version, const char *base,
                                    struct ck_field_errors *errs)
{
    const json_t *fields = json_object_get(version, "selectableFields");
    const json_t *root = json_object_get(json_object_get(version, "schema"), "openAPIV3Schema");
    const char *seen[CK_CRD_SELECTABLE_FIELDS_MAX + 1];
    size_t n_seen = 0, unique = 0;
    size_t i;
    const json_t *f;
    json_array_foreach(fields, i, f)
    {
        char field[200];
        snprintf(field, sizeof(field), "%s.selectableFields[%zu].jsonPath", base, i);
        const char *path = json_string_value(json_object_get(f, "jsonPath"));
        if (!path || !*path) {
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, field, NULL, false, NULL);
            continue;
        }
        /* a simple path: .a.b, property names only (no array notation), each in the schema */
        const json_t *schema = root;
        const char *why = path[0] != '.' ? "must start with a '.'" : NULL;
        bool metadata = strncmp(path, ".metadata.", 10) == 0 || strcmp(path, ".metadata") == 0;
        for (const char *seg = path + 1; !why && !metadata;) {
            const char *dot = strchr(seg, '.');
            size_t len = dot ? (size_t)(dot - seg) : strlen(seg);
            char name[128];
            if (len == 0 || len >= sizeof(name) || memchr(seg, '[', len)) {
                why = "does not refer to a valid field";
                break;
            }
            memcpy(name, seg, len);
            name[len] = '\0';
            schema = json_object_get(json_object_get(schema, "properties"), name);
            if (!schema)
                why = "does not refer to a valid field";
            if (!dot)
                break;
            seg = dot + 1;
        }
        if (why) {
            ck_field_errors_add(errs, CK_FIELD_INVALID, field, path, true, "is an invalid path: %s",
                                why);
            continue;
        }
        if (metadata) {
            ck_field_errors_add(errs, CK_FIELD_INVALID, field, path, true,
                                "must not point to fields in metadata");
            continue;
        }
        const char *type = json_string_value(json_object_get(schema, "type"));
        if (!type || (strcmp(type, "string") != 0 && strcmp(type, "boolean") != 0 &&
                      strcmp(type, "integer") != 0))
            ck_field_errors_add(errs, CK_FIELD_INVALID, field, path, true,
                                "must point to a field of type string, boolean or integer. Enum "
                                "string fields and strings with formats are allowed.");
        bool dup = false;
        for (size_t j = 0; j < n_seen; j++)
            dup = dup || strcmp(seen[j], path) == 0;
        if (dup) {
            ck_field_errors_add(errs, CK_FIELD_DUPLICATE, field, path, true, NULL);
            continue;
        }
        unique++;
        if (n_seen < CK_CRD_SELECTABLE_FIELDS_MAX + 1)
            seen[n_seen++] = path;
    }
    if (unique > CK_CRD_SELECTABLE_FIELDS_MAX) {
        char field[160], count[32];
        snprintf(field, sizeof(field), "%s.selectableFields", base);
        snprintf(count, sizeof(count), "%zu", unique);
        ck_field_errors_add(errs, CK_FIELD_TOO_MANY, field, count, false,
                            "must have at most %d items", CK_CRD_SELECTABLE_FIELDS_MAX);
    }
}

/* Served versions, in Kubernetes' priority order. */
static int by_priority(const void *a, const void *b)
{
    const json_t *va = *(const json_t *const *)a, *vb = *(const json_t *const *)b;
    return ck_crd_version_compare(json_string_value(json_object_get(va, "name")),
                                  json_string_value(json_object_get(vb, "name")));
}

int ck_crd_kinds_new(const json_t *crd, const struct ck_schemas *base,
                     struct ck_crd_kinds **ret_kinds, struct ck_err *reterr)
{
    const json_t *spec = json_object_get(crd, "spec");
    const json_t *status = json_object_get(crd, "status");
    const json_t *names = json_object_get(status, "acceptedNames");
    if (!json_string_length(json_object_get(names, "plural")))
        names = json_object_get(spec, "names");
    const char *group = json_string_value(json_object_get(spec, "group"));
    const char *plural = json_string_value(json_object_get(names, "plural"));
    const char *kind_name = json_string_value(json_object_get(names, "kind"));
    const char *scope = json_string_value(json_object_get(spec, "scope"));
    const json_t *versions = json_object_get(spec, "versions");
    bool terminating =
        json_object_get(json_object_get(crd, "metadata"), "deletionTimestamp") != NULL;
    if (!group || !*group || !plural || !*plural || !kind_name || !*kind_name || !scope)
        return ck_err_set(reterr, CK_EINVAL, "the definition lacks a group, plural, kind or scope");

    struct ck_crd_kinds *k = calloc(1, sizeof(*k));
    size_t n_versions = json_array_size(versions);
    const json_t **served = calloc(n_versions ? n_versions : 1, sizeof(*served));
    if (k)
        k->kinds = calloc(n_versions ? n_versions : 1, sizeof(*k->kinds));
    if (!k || !served || !k->kinds) {
        free(served);
        ck_crd_kinds_free(k);
        return ck_err_no_memory(reterr);
    }
    const char *storage = NULL;
    size_t n_served = 0;
    for (size_t i = 0; i < n_versions; i++) {
        const json_t *v = json_array_get(versions, i);
        if (json_is_true(json_object_get(v, "storage")))
            storage = json_string_value(json_object_get(v, "name"));
        if (json_is_true(json_object_get(v, "served")) &&
            json_string_length(json_object_get(v, "name")))
            served[n_served++] = v;
    }
    qsort(served, n_served, sizeof(*served), by_priority);

    const char *singular = json_string_value(json_object_get(names, "singular"));
    const char *list_kind = json_string_value(json_object_get(names, "listKind"));
    char lower[256];
    snprintf(lower, sizeof(lower), "%s", kind_name);
    for (char *p = lower; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    char reversed[256];
    reversed_group(group, reversed, sizeof(reversed));
    bool failed = false;
    const char *k_group = keep(k, group);
    const char *k_plural = keep(k, plural);
    const char *k_kind = keep(k, kind_name);
    const char *k_singular = keep(k, singular && *singular ? singular : lower);
    const char *k_list_kind =
        list_kind && *list_kind ? keep(k, list_kind) : keepf(k, "%sList", kind_name);
    const char *k_storage_resource = keepf(k, "%s/%s", group, plural);
    const char *k_storage_version = storage ? keepf(k, "%s/%s", group, storage) : NULL;
    const char *const *short_names = keep_list(k, json_object_get(names, "shortNames"), &failed);
    const char *const *categories = keep_list(k, json_object_get(names, "categories"), &failed);
    const json_t *conversion = json_object_get(spec, "conversion");
    const char *strategy = json_string_value(json_object_get(conversion, "strategy"));
    if (strategy && strcmp(strategy, "Webhook") == 0 &&
        json_is_object(json_object_get(conversion, "webhook")))
        failed |= !(k->conversion_webhook = json_deep_copy(json_object_get(conversion, "webhook")));
    failed |= !k_group || !k_plural || !k_kind || !k_singular || !k_list_kind ||
              !k_storage_resource || (storage && !k_storage_version);
    int r = failed ? ck_err_no_memory(reterr) : 0;

    for (size_t i = 0; i < n_served && r == 0; i++) {
        const json_t *v = served[i];
        struct crd_kind *ck = &k->kinds[k->n++];
        const char *version = keep(k, json_string_value(json_object_get(v, "name")));
        const char *schema_name = keepf(k, "%s.%s.%s", reversed, version ? version : "", kind_name);
        const char *list_name =
            keepf(k, "%s.%s.%s", reversed, version ? version : "", k_list_kind ? k_list_kind : "");
        if (!version || !schema_name || !list_name) {
            r = ck_err_no_memory(reterr);
            break;
        }
        ck->kind = (struct ck_kind){
            .group = k_group,
            .version = version,
            .kind = k_kind,
            .list_kind = k_list_kind,
            .resource = k_plural,
            .singular = k_singular,
            .short_names = short_names,
            .categories = categories,
            .namespaced = strcmp(scope, "Namespaced") == 0,
            .has_generation = true,
            .name_rule = CK_NAME_DNS_SUBDOMAIN,
            .schema = schema_name,
            .storage_resource = k_storage_resource,
            .storage_api_version = k_storage_version,
            .conversion_webhook = k->conversion_webhook,
            .refuse_create = terminating ? "create not allowed while custom resource definition "
                                           "is terminating"
                                         : NULL,
        };
        const json_t *open_api = json_object_get(json_object_get(v, "schema"), "openAPIV3Schema");
        ck->kind.defaults_on_read = has_defaults(open_api);
        json_t *doc = schema_document(schema_name, list_name, open_api, group, version, kind_name,
                                      k_list_kind);
        char *text = doc ? ck__json_dumps(doc, JSON_COMPACT, NULL) : NULL;
        json_decref(doc);
        if (!text) {
            r = ck_err_no_memory(reterr);
            break;
        }
        const char *docs[] = {text};
        r = ck_schemas_new_layered(base, docs, 1, &ck->schemas, reterr);
        free(text);
        if (r < 0)
            break;
        ck->kind.schemas = ck->schemas;
        r = ck_crd_rules_new(open_api, 0, &ck->rules, reterr);
        if (r < 0)
            break;
        ck->kind.validation_rules = ck->rules;
        r = build_subresources(k, ck, json_object_get(v, "subresources"));
        if (r == 0)
            r = build_columns(k, ck, json_object_get(v, "additionalPrinterColumns"));
        if (r == 0)
            r = build_selectable(k, ck, json_object_get(v, "selectableFields"));
        if (r < 0)
            ck_err_no_memory(reterr);
    }
    free(served);
    if (r < 0) {
        ck_crd_kinds_free(k);
        return r;
    }
    *ret_kinds = k;
    return 0;
}

size_t ck_crd_kinds_count(const struct ck_crd_kinds *kinds)
{
    return kinds ? kinds->n : 0;
}

const struct ck_kind *ck_crd_kinds_get(const struct ck_crd_kinds *kinds, size_t i)
{
    return kinds && i < kinds->n ? &kinds->kinds[i].kind : NULL;
}

struct ck_crd_kinds *ck_crd_kinds_free(struct ck_crd_kinds *kinds)
{
    if (!kinds)
        return NULL;
    for (size_t i = 0; i < kinds->n; i++) {
        free(kinds->kinds[i].columns);
        free(kinds->kinds[i].field_labels);
        ck_schemas_free(kinds->kinds[i].schemas);
        ck_crd_rules_free(kinds->kinds[i].rules);
    }
    free(kinds->kinds);
    for (size_t i = 0; i < kinds->n_strings; i++)
        free(kinds->strings[i]);
    free(kinds->strings);
    json_decref(kinds->conversion_webhook);
    free(kinds);
    return NULL;
}

/* ---- defaulting on read ------------------------------------------------- */

int ck_crd_default_read(const struct ck_kind *kind, json_t *obj)
{
    if (!kind || !kind->defaults_on_read || !json_is_object(obj))
        return 0;
    /*
     * A CRD's schema may not default inside metadata (only name and
     * generateName may be constrained there), so the walk skips ObjectMeta,
     * most of a stored object and of the defaulting's time: metadata is held
     * aside as null (which a custom resource's schema does not default: it
     * has no default) and put back in its place.
     */
    json_t *meta = json_incref(json_object_get(obj, "metadata"));
    if (meta && json_object_set_new(obj, "metadata", json_null()) < 0) {
        json_decref(meta);
        return CK_ENOMEM;
    }
    int r = ck_schema_default(ck_kind_schemas(kind, NULL), kind->schema, obj);
    if (meta && json_object_set_new(obj, "metadata", meta) < 0)
        r = CK_ENOMEM;
    return r;
}

/*
 * Counts the values below v (members, elements) and the nulls among them,
 * leaving out top-level metadata. Defaulting only adds values or replaces a
 * null, so equal counts before and after mean it changed nothing.
 */
static void count_values(const json_t *v, bool top, size_t *n, size_t *nulls)
{
    const char *key;
    json_t *child;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, key, child)
        {
            if (top && strcmp(key, "metadata") == 0)
                continue;
            (*n)++;
            count_values(child, false, n, nulls);
        }
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, child)
        {
            (*n)++;
            count_values(child, false, n, nulls);
        }
    } else if (json_is_null(v)) {
        (*nulls)++;
    }
}

char *ck_crd_default_stored(const struct ck_kind *kind, const char *stored, size_t len,
                            size_t *ret_len, bool *failed)
{
    if (!kind || !kind->defaults_on_read)
        return NULL;
    json_t *obj = NULL;
    int r = ck_json_loadb(stored, len, 0, &obj, NULL);
    if (r == CK_ENOMEM) {
        *failed = true;
        return NULL;
    }
    if (!json_is_object(obj)) {
        json_decref(obj);
        return NULL;
    }
    size_t before = 0, before_nulls = 0, after = 0, after_nulls = 0;
    count_values(obj, true, &before, &before_nulls);
    char *out = NULL;
    r = ck_crd_default_read(kind, obj);
    if (r == 0)
        count_values(obj, true, &after, &after_nulls);
    if (r == 0 && after == before && after_nulls == before_nulls) {
        json_decref(obj); /* every default was there already: the stored bytes serve */
        return NULL;
    }
    if (r == 0)
        out = ck__json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER, ret_len);
    json_decref(obj);
    if (!out)
        *failed = true;
    return out;
}
