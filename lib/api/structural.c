/*
 * structural.c - the checks a CustomResourceDefinition's openAPIV3Schema
 * must pass, as apiextensions makes them, with its messages and paths.
 *
 * Three groups, in apiextensions' order:
 * 1. structural invariants (pkg/apiserver/schema): a type for every
 *    specified field and array item, none at all in the value validations
 *    (allOf, anyOf, oneOf, not) which may not specify additionalProperties,
 *    defaults, descriptions, nullable or x-kubernetes-* either; the root an
 *    object without additionalProperties; consistent int-or-string,
 *    embedded-resource and preserve-unknown-fields; nothing but name and
 *    generateName under the root's metadata. Sorted by their text.
 * 2. only when 1 found nothing: every default validates against its schema
 *    and is already pruned ("must not have unknown fields").
 * 3. the OpenAPI checks (ValidateCustomResourceDefinitionOpenAPISchema):
 *    valid type names, no $ref, definitions, dependencies, additionalItems,
 *    patternProperties, id or uniqueItems, additionalProperties and
 *    properties exclusive, list and map types consistent with their keys,
 *    no defaults inside the root's apiVersion, kind and metadata, nullable
 *    not at the root.
 * Properties are visited in name order, so the output is stable.
 *
 * Completeness (a field that the root's allOf/anyOf/oneOf/not mention must
 * be in the structure) is part of 1, as in Kubernetes.
 *
 * x-kubernetes-validations: the rules' fields are checked (a rule, a
 * message without line breaks, a supported reason, a fieldPath that names
 * a field of the node's schema), then, where nothing at or below the
 * rule's node is wrong, each rule and messageExpression is compiled
 * (lib/cel): what does not compile is refused with the compiler's message,
 * as is a rule reading oldSelf below a list that is not a list-type map.
 *
 * Not checked (docs/differences.md): the estimated cost of the rules (it
 * needs a type checker), and the status-subresource root restriction.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "ckube/cel.h"
#include "ckube/internal/util.h"
#include "internal.h"

#define MAX_DEPTH 64

enum level { ROOT_LEVEL, ITEM_LEVEL, FIELD_LEVEL };

/* A path below the schema's; NULL when memory ran out (errs->nomem is then set). */
static char *child_path(struct ck_field_errors *errs, const char *path, const char *fmt,
                        const char *arg)
{
    /* fmt is "<before>%s<after>": path, before, arg, after */
    const char *hole = strstr(fmt, "%s");
    char *out = NULL;
    struct ck__buf b = {0};
    ck__buf_adds(&b, path);
    if (hole) {
        ck__buf_printf(&b, "%.*s", (int)(hole - fmt), fmt);
        ck__buf_adds(&b, arg);
        ck__buf_adds(&b, hole + 2);
    } else {
        ck__buf_adds(&b, fmt);
    }
    out = ck__buf_take(&b);
    if (!out)
        errs->nomem = true;
    return out;
}

/* An error at child_path(path, fmt, arg). */
static void add_below(struct ck_field_errors *errs, enum ck_field_error_type type, const char *path,
                      const char *fmt, const char *arg, const char *value, bool value_is_string,
                      const char *detail)
{
    char *where = child_path(errs, path, fmt, arg);
    if (where)
        ck_field_errors_add(errs, type, where, value, value_is_string, "%s", detail);
    free(where);
}

static void add(struct ck_field_errors *errs, enum ck_field_error_type type, const char *path,
                const char *suffix, const char *value, bool value_is_string, const char *detail)
{
    add_below(errs, type, path, "%s", suffix, value, value_is_string, detail);
}

static const char *type_of(const json_t *s)
{
    const char *type = json_string_value(json_object_get(s, "type"));
    return type ? type : "";
}

static bool flag(const json_t *s, const char *key)
{
    return json_is_true(json_object_get(s, key));
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The property names of s in order; caller frees the array (not the names). */
static const char **sorted_keys(const json_t *obj, size_t *n, struct ck_field_errors *errs)
{
    *n = 0;
    if (!json_is_object(obj) || json_object_size(obj) == 0)
        return NULL;
    const char **keys = calloc(json_object_size(obj), sizeof(*keys));
    if (!keys) {
        errs->nomem = true;
        return NULL;
    }
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)obj, key, value)
    {
        keys[(*n)++] = key;
    }
    qsort(keys, *n, sizeof(*keys), compare_names);
    return keys;
}

/* The path of the index'th item of the list named list below path: "<path>.<list>[<index>]". */
static char *item_path(struct ck_field_errors *errs, const char *path, const char *list,
                       size_t index)
{
    char tail[64];
    snprintf(tail, sizeof(tail), ".%s[%zu]", list, index);
    return child_path(errs, path, "%s", tail);
}

/*
 * A step of a walk over sub-schemas: sub stands at path, under the property
 * or list named key (NULL for not, items and additionalProperties), as its
 * index'th item for a list. arg is the walk's own state.
 */
typedef void (*visit_fn)(const json_t *sub, const char *path, const char *key, size_t index,
                         void *arg);

/* Visits sub at path's child named by suffix (".items", ".not"...). */
static void visit_child(struct ck_field_errors *errs, const json_t *sub, const char *path,
                        const char *suffix, visit_fn visit, void *arg)
{
    char *at = child_path(errs, path, "%s", suffix);
    if (at)
        visit(sub, at, NULL, 0, arg);
    free(at);
}

/* Visits each property of props, in name order. */
static void each_property(struct ck_field_errors *errs, const json_t *props, const char *path,
                          visit_fn visit, void *arg)
{
    size_t n;
    const char **keys = sorted_keys(props, &n, errs);
    for (size_t i = 0; i < n; i++) {
        char *at = child_path(errs, path, ".properties[%s]", keys[i]);
        if (at)
            visit(json_object_get(props, keys[i]), at, keys[i], i, arg);
        free(at);
    }
    free(keys);
}

/* Visits s's value validations: not, then the items of allOf, oneOf and anyOf. */
static void each_value_validation(struct ck_field_errors *errs, const json_t *s, const char *path,
                                  visit_fn visit, void *arg)
{
    const json_t *not = json_object_get(s, "not");
    if (json_is_object(not ))
        visit_child(errs, not, path, ".not", visit, arg);
    static const char *const junctors[] = {"allOf", "oneOf", "anyOf"};
    for (size_t j = 0; j < 3; j++) {
        size_t i;
        json_t *item;
        json_array_foreach(json_object_get(s, junctors[j]), i, item)
        {
            char *at = item_path(errs, path, junctors[j], i);
            if (at)
                visit(item, at, junctors[j], i, arg);
            free(at);
        }
    }
}

/* A type that a keyword needs: Required when there is none, Invalid otherwise. */
static void type_must_be(struct ck_field_errors *errs, const char *path, const char *type,
                         const char *detail)
{
    if (!*type)
        add(errs, CK_FIELD_REQUIRED, path, ".type", NULL, false, detail);
    else
        add(errs, CK_FIELD_INVALID, path, ".type", type, true, detail);
}

/* ---- 1. structural invariants ------------------------------------------- */

static void nested_value_validation(const json_t *v, const char *path, struct ck_field_errors *errs,
                                    int depth);

struct value_walk {
    struct ck_field_errors *errs;
    int depth; /* the parent's */
    bool skip_any_of, skip_first_all_of_any_of;
};

static void visit_value_validation(const json_t *item, const char *at, const char *junctor,
                                   size_t index, void *arg)
{
    const struct value_walk *w = arg;
    if (junctor && strcmp(junctor, "anyOf") == 0 && w->skip_any_of)
        return;
    if (junctor && strcmp(junctor, "allOf") == 0 && index == 0 && w->skip_first_all_of_any_of) {
        /* the int-or-string pattern's anyOf is allowed; check the rest */
        json_t *rest = ck__json_copy(item);
        if (rest) {
            json_object_del(rest, "anyOf");
            nested_value_validation(rest, at, w->errs, w->depth + 1);
            json_decref(rest);
        } else {
            w->errs->nomem = true;
        }
        return;
    }
    nested_value_validation(item, at, w->errs, w->depth + 1);
}

static void value_validation(const json_t *s, const char *path, struct ck_field_errors *errs,
                             int depth, bool skip_any_of, bool skip_first_all_of_any_of)
{
    struct value_walk w = {errs, depth, skip_any_of, skip_first_all_of_any_of};
    each_value_validation(errs, s, path, visit_value_validation, &w);
}

static void nested_value_validation(const json_t *v, const char *path, struct ck_field_errors *errs,
                                    int depth)
{
    if (!json_is_object(v) || depth > MAX_DEPTH)
        return;
    value_validation(v, path, errs, depth, false, false);
    struct value_walk w = {errs, depth, false, false};
    const json_t *items = json_object_get(v, "items");
    if (json_is_object(items))
        visit_child(errs, items, path, ".items", visit_value_validation, &w);
    const json_t *props = json_object_get(v, "properties");
    each_property(errs, props, path, visit_value_validation, &w);
    /* what a value validation may not set, and the message when it does */
    enum set_when { PRESENT, NON_EMPTY_STRING, IS_TRUE, NON_EMPTY_ARRAY };
    static const struct {
        const char *key;
        enum set_when set_when;
        const char *detail;
    } forbidden[] = {
        {"type", PRESENT, "must be empty to be structural"},
        {"additionalProperties", PRESENT, "must be undefined to be structural"},
        {"default", PRESENT, "must be undefined to be structural"},
        {"title", NON_EMPTY_STRING, "must be empty to be structural"},
        {"description", NON_EMPTY_STRING, "must be empty to be structural"},
        {"nullable", IS_TRUE, "must be false to be structural"},
        {"externalDocs", PRESENT, "must be undefined to be structural"},
        {"x-kubernetes-preserve-unknown-fields", IS_TRUE, "must be false to be structural"},
        {"x-kubernetes-embedded-resource", IS_TRUE, "must be false to be structural"},
        {"x-kubernetes-int-or-string", IS_TRUE, "must be false to be structural"},
        {"x-kubernetes-list-map-keys", NON_EMPTY_ARRAY, "must be empty to be structural"},
        {"x-kubernetes-list-type", PRESENT, "must be undefined to be structural"},
        {"x-kubernetes-map-type", PRESENT, "must be undefined to be structural"},
        {"x-kubernetes-validations", NON_EMPTY_ARRAY, "must be empty to be structural"},
    };
    for (size_t i = 0; i < sizeof(forbidden) / sizeof(forbidden[0]); i++) {
        const json_t *value = json_object_get(v, forbidden[i].key);
        bool set = forbidden[i].set_when == PRESENT            ? value != NULL
                   : forbidden[i].set_when == NON_EMPTY_STRING ? json_string_length(value) > 0
                   : forbidden[i].set_when == IS_TRUE          ? json_is_true(value)
                                                               : json_array_size(value) > 0;
        if (set)
            add_below(errs, CK_FIELD_FORBIDDEN, path, ".%s", forbidden[i].key, NULL, false,
                      forbidden[i].detail);
    }
    if (json_object_get(props, "metadata"))
        add(errs, CK_FIELD_FORBIDDEN, path, ".properties[metadata]", NULL, false,
            "must not be specified in a nested context");
}

/* anyOf: [{type: integer}, {type: string}] exactly */
static bool int_or_string_any_of(const json_t *any_of)
{
    if (json_array_size(any_of) != 2)
        return false;
    json_t *a = json_pack("{s:s}", "type", "integer");
    json_t *b = json_pack("{s:s}", "type", "string");
    bool yes = a && b && json_equal(json_array_get(any_of, 0), a) &&
               json_equal(json_array_get(any_of, 1), b);
    json_decref(a);
    json_decref(b);
    return yes;
}

/* The root's metadata may say type: object and list name and generateName; nothing else. */
static bool root_metadata_allowed(const json_t *m)
{
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)m, key, value)
    {
        if (strcmp(key, "type") == 0 || strcmp(key, "default") == 0)
            continue;
        if (strcmp(key, "properties") == 0 && json_is_object(value)) {
            size_t n = json_object_size(value);
            bool name = json_object_get(value, "name") != NULL;
            bool generate = json_object_get(value, "generateName") != NULL;
            if (n == 0 || (n == 2 && name && generate) || (n == 1 && (name || generate)))
                continue;
        }
        return false;
    }
    return true;
}

static void invariants(const json_t *s, enum level lvl, const char *path,
                       struct ck_field_errors *errs, int depth);

struct invariants_walk {
    struct ck_field_errors *errs;
    int depth; /* the parent's */
    enum level lvl;
};

static void visit_invariants(const json_t *sub, const char *at, const char *key, size_t index,
                             void *arg)
{
    (void)key;
    (void)index;
    const struct invariants_walk *w = arg;
    invariants(sub, w->lvl, at, w->errs, w->depth + 1);
}

static void invariants(const json_t *s, enum level lvl, const char *path,
                       struct ck_field_errors *errs, int depth)
{
    if (!json_is_object(s) || depth > MAX_DEPTH)
        return;
    const char *type = type_of(s);
    const json_t *items = json_object_get(s, "items");
    if (strcmp(type, "array") == 0 && !items)
        add(errs, CK_FIELD_REQUIRED, path, ".items", NULL, false, "must be specified");
    struct invariants_walk item_walk = {errs, depth, ITEM_LEVEL};
    if (json_is_object(items))
        visit_child(errs, items, path, ".items", visit_invariants, &item_walk);
    struct invariants_walk field_walk = {errs, depth, FIELD_LEVEL};
    const json_t *props = json_object_get(s, "properties");
    each_property(errs, props, path, visit_invariants, &field_walk);
    const json_t *extra = json_object_get(s, "additionalProperties");
    if (extra && !json_is_false(extra)) {
        if (lvl == ROOT_LEVEL)
            add(errs, CK_FIELD_FORBIDDEN, path, ".additionalProperties", NULL, false,
                "must not be used at the root");
        if (json_is_object(extra))
            visit_child(errs, extra, path, ".additionalProperties", visit_invariants, &field_walk);
    }
    bool ios = flag(s, "x-kubernetes-int-or-string");
    bool preserve = flag(s, "x-kubernetes-preserve-unknown-fields");
    bool embedded = flag(s, "x-kubernetes-embedded-resource");
    if (ios && preserve)
        add(errs, CK_FIELD_INVALID, path, ".x-kubernetes-preserve-unknown-fields", "true", false,
            "must be false if x-kubernetes-int-or-string is true");
    if (ios && embedded)
        add(errs, CK_FIELD_INVALID, path, ".x-kubernetes-embedded-resource", "true", false,
            "must be false if x-kubernetes-int-or-string is true");
    const json_t *all_of = json_object_get(s, "allOf");
    bool skip_any_of = int_or_string_any_of(json_object_get(s, "anyOf"));
    bool skip_first = json_array_size(all_of) >= 1 &&
                      int_or_string_any_of(json_object_get(json_array_get(all_of, 0), "anyOf"));
    value_validation(s, path, errs, depth, skip_any_of, skip_first);
    if (json_is_string(json_object_get(s, "pattern"))) {
        bool nomem = false;
        char *why = NULL;
        const char *pattern = json_string_value(json_object_get(s, "pattern"));
        if (ck__pattern_match(pattern, "", &why, &nomem) == CK__PATTERN_INVALID) {
            struct ck__buf detail = {0};
            ck__buf_printf(&detail, "must be a valid regular expression, but isn't: %s",
                           why ? why : "");
            if (detail.err || !detail.p)
                nomem = true;
            else
                add(errs, CK_FIELD_INVALID, path, ".pattern", pattern, true, detail.p);
            ck__buf_release(&detail);
        }
        free(why);
        if (nomem)
            errs->nomem = true;
    }
    bool check_metadata = lvl == ROOT_LEVEL || embedded;
    if (embedded && strcmp(type, "object") != 0) {
        type_must_be(errs, path, type, "must be object if x-kubernetes-embedded-resource is true");
    } else if (!*type && !ios && !preserve) {
        static const char *const why[] = {"must not be empty at the root",
                                          "must not be empty for specified array items",
                                          "must not be empty for specified object fields"};
        add(errs, CK_FIELD_REQUIRED, path, ".type", NULL, false, why[lvl]);
    }
    if (embedded && extra)
        add(errs, CK_FIELD_FORBIDDEN, path, ".additionalProperties", NULL, false,
            "must not be used if x-kubernetes-embedded-resource is set");
    if (lvl == ROOT_LEVEL && *type && strcmp(type, "object") != 0)
        add(errs, CK_FIELD_INVALID, path, ".type", type, true, "must be object at the root");
    static const char *const type_meta[] = {"kind", "apiVersion"};
    for (size_t i = 0; i < 2 && check_metadata; i++) {
        const json_t *field = json_object_get(props, type_meta[i]);
        if (field && strcmp(type_of(field), "string") != 0)
            add_below(errs, CK_FIELD_INVALID, path, ".properties[%s].type", type_meta[i],
                      type_of(field), true, "must be string");
    }
    const json_t *metadata = json_object_get(props, "metadata");
    if (metadata) {
        if (check_metadata && strcmp(type_of(metadata), "object") != 0)
            add(errs, CK_FIELD_INVALID, path, ".properties[metadata].type", type_of(metadata), true,
                "must be object");
        if (lvl == ROOT_LEVEL && !root_metadata_allowed(metadata))
            add(errs, CK_FIELD_FORBIDDEN, path, ".properties[metadata]", NULL, false,
                "must not specify anything other than name and generateName, but metadata is "
                "implicitly specified");
    }
    if (embedded && !preserve && json_object_size(props) == 0)
        add(errs, CK_FIELD_REQUIRED, path, ".properties", NULL, false,
            "must not be empty if x-kubernetes-embedded-resource is true without "
            "x-kubernetes-preserve-unknown-fields");
}

/* ---- 1b. completeness: what a value validation names, the structure specifies */

static void nested_completeness(const json_t *v, const json_t *s, const char *s_path,
                                const char *v_path, struct ck_field_errors *errs, int depth);

static void missing(const char *s_path, const char *v_path, struct ck_field_errors *errs)
{
    ck_field_errors_add(errs, CK_FIELD_REQUIRED, s_path, NULL, false, "because it is defined in %s",
                        v_path);
}

struct completeness_walk {
    struct ck_field_errors *errs;
    int depth; /* the parent's */
    const json_t *s;
    const char *s_path;
};

static void visit_completeness(const json_t *v, const char *v_path, const char *key, size_t index,
                               void *arg)
{
    (void)key;
    (void)index;
    const struct completeness_walk *w = arg;
    nested_completeness(v, w->s, w->s_path, v_path, w->errs, w->depth + 1);
}

/* v is a schema to compare with s; s not being one is reported as missing. */
static bool comparable(const json_t *v, const json_t *s, const char *s_path, const char *v_path,
                       struct ck_field_errors *errs, int depth)
{
    if (!json_is_object(v) || depth > MAX_DEPTH)
        return false;
    if (!json_is_object(s)) {
        missing(s_path, v_path, errs);
        return false;
    }
    return true;
}

static void value_completeness(const json_t *v, const json_t *s, const char *s_path,
                               const char *v_path, struct ck_field_errors *errs, int depth)
{
    if (!comparable(v, s, s_path, v_path, errs, depth))
        return;
    struct completeness_walk w = {errs, depth, s, s_path};
    each_value_validation(errs, v, v_path, visit_completeness, &w);
}

static void nested_completeness(const json_t *v, const json_t *s, const char *s_path,
                                const char *v_path, struct ck_field_errors *errs, int depth)
{
    if (!comparable(v, s, s_path, v_path, errs, depth))
        return;
    value_completeness(v, s, s_path, v_path, errs, depth);
    const json_t *items = json_object_get(v, "items");
    if (json_is_object(items)) {
        char *sp = child_path(errs, s_path, "%s", ".items");
        char *vp = child_path(errs, v_path, "%s", ".items");
        if (sp && vp)
            nested_completeness(items, json_object_get(s, "items"), sp, vp, errs, depth + 1);
        free(sp);
        free(vp);
    }
    size_t n;
    const json_t *props = json_object_get(v, "properties");
    const char **keys = sorted_keys(props, &n, errs);
    for (size_t i = 0; i < n; i++) {
        char *sp = child_path(errs, s_path, ".properties[%s]", keys[i]);
        char *vp = child_path(errs, v_path, ".properties[%s]", keys[i]);
        const json_t *s_field = json_object_get(json_object_get(s, "properties"), keys[i]);
        if (sp && vp) {
            if (!s_field)
                missing(sp, vp, errs);
            else
                nested_completeness(json_object_get(props, keys[i]), s_field, sp, vp, errs,
                                    depth + 1);
        }
        free(sp);
        free(vp);
    }
    free(keys);
}

static int compare_rendered(const void *a, const void *b)
{
    const struct ck_field_error *x = a, *y = b;
    char *sx = ck_field_error_string(x), *sy = ck_field_error_string(y);
    int r = sx && sy ? strcmp(sx, sy) : 0;
    free(sx);
    free(sy);
    return r;
}

/* ---- 2. defaults --------------------------------------------------------- */

static void defaults(const json_t *s, const char *path, bool root, struct ck_field_errors *errs,
                     int depth);

struct defaults_walk {
    struct ck_field_errors *errs;
    int depth; /* the parent's */
    bool root; /* the parent is the root */
};

static void visit_defaults(const json_t *sub, const char *at, const char *key, size_t index,
                           void *arg)
{
    (void)index;
    const struct defaults_walk *w = arg;
    if (w->root && key && strcmp(key, "metadata") == 0)
        return; /* refused by the OpenAPI checks */
    defaults(sub, at, false, w->errs, w->depth + 1);
}

static void defaults(const json_t *s, const char *path, bool root, struct ck_field_errors *errs,
                     int depth)
{
    if (!json_is_object(s) || depth > MAX_DEPTH)
        return;
    const json_t *def = json_object_get(s, "default");
    if (def) {
        char *at = child_path(errs, path, "%s", ".default");
        if (at) {
            /* pruning first, then validation: both are reported */
            int pruned = ck__custom_is_pruned(s, def);
            if (pruned < 0) {
                errs->nomem = true;
            } else if (!pruned) {
                char *value = ck__json_dumps(def, JSON_ENCODE_ANY | JSON_COMPACT, NULL);
                ck_field_errors_add(errs, CK_FIELD_INVALID, at, value ? value : "", false,
                                    "must not have unknown fields");
                free(value);
            }
            ck__custom_validate(s, def, at, errs);
        }
        free(at);
    }
    struct defaults_walk w = {errs, depth, root};
    const json_t *items = json_object_get(s, "items");
    if (json_is_object(items))
        visit_child(errs, items, path, ".items", visit_defaults, &w);
    const json_t *extra = json_object_get(s, "additionalProperties");
    if (json_is_object(extra))
        visit_child(errs, extra, path, ".additionalProperties", visit_defaults, &w);
    each_property(errs, json_object_get(s, "properties"), path, visit_defaults, &w);
}

/* ---- 3. OpenAPI checks -------------------------------------------------- */

struct openapi_ctx {
    bool allow_defaults;
    const char *no_defaults_reason; /* "in top-level metadata", ... */
    bool inside_meta;
    /* the path of the first list above that is not a list-type map: no oldSelf below */
    const char *uncorrelatable;
    size_t *cel_errors; /* how many of errs the rules' compilation added */
};

static bool valid_type_name(const char *type)
{
    static const char *const names[] = {"array",  "boolean", "integer", "number",
                                        "object", "string",  NULL};
    for (size_t i = 0; names[i]; i++)
        if (strcmp(type, names[i]) == 0)
            return true;
    return false;
}

/* strings.TrimSpace(s) is empty */
static bool blank(const char *s)
{
    for (; *s; s++)
        if (!isspace((unsigned char)*s))
            return false;
    return true;
}

static bool has_newlines(const char *s)
{
    return strpbrk(s, "\r\n") != NULL;
}

/* The text of a rule between its surrounding white space has a line break. */
static bool trimmed_has_newlines(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        n--;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\n' || s[i] == '\r')
            return true;
    return false;
}

/* A CEL error at the index'th rule's member (".rule", ".messageExpression"). */
static void rule_error(struct ck_field_errors *errs, const char *at, const char *member,
                       const json_t *rule, const char *detail)
{
    char *value = ck__crd_rule_go_value(rule);
    if (!value)
        errs->nomem = true;
    else
        add(errs, CK_FIELD_INVALID, at, member, value, false, detail);
    free(value);
}

/* Compiles text and type-checks it over decls: 1 when it is not of type want, else 0 or <0. */
static int compile_checked(const char *text, const struct ck_cel_decl *decls, const char *want,
                           struct ck_cel_program **ret, struct ck_err *err)
{
    char type[64] = "";
    int r = ck_cel_compile(text, strlen(text), ret, err);
    if (r == 0)
        r = ck_cel_check(*ret, decls, 2, type, sizeof(type), err);
    return r == 0 && strcmp(type, want) ? 1 : r;
}

/*
 * Compiles a rule and its messageExpression as apiextensions does once the
 * schema at and below the rule's node is valid, type-checked with self and
 * oldSelf of the node's type: what does not compile is refused with the
 * compiler's message, so is a rule that is not a bool or a messageExpression
 * that is not a string, and a rule that reads oldSelf below
 * a list that cannot correlate its elements (one not of list-type map).
 */
static void compile_rule(const json_t *rule, const char *at, const json_t *s, bool resource_root,
                         struct openapi_ctx ctx, struct ck_field_errors *errs)
{
    const char *text = json_string_value(json_object_get(rule, "rule"));
    const char *expression = json_string_value(json_object_get(rule, "messageExpression"));
    if (!text || blank(text))
        return;
    /* self and oldSelf have the node's type (oldSelf an optional with optionalOldSelf) */
    struct ck_cel_decl decls[] = {
        {.name = "self", .schema = s, .type_name = "selfType0", .resource_root = resource_root},
        {.name = "oldSelf",
         .schema = s,
         .type_name = "selfType0",
         .resource_root = resource_root,
         .optional = json_is_true(json_object_get(rule, "optionalOldSelf"))},
    };
    struct ck_cel_program *prog = NULL, *message = NULL;
    struct ck_err err = {0};
    /* what is wrong, as apiextensions words it; the compiler's message follows a failure */
    int r = compile_checked(text, decls, "bool", &prog, &err);
    const char *why = r > 0 ? "cel expression must evaluate to a bool" : "compilation failed: ";
    bool rule_ok = r == 0, in_message = false;
    if (r == 0 && expression && *expression) {
        in_message = true;
        r = compile_checked(expression, decls, "string", &message, &err);
        why = r > 0 ? "messageExpression must evaluate to a string"
                    : "messageExpression compilation failed: ";
    }
    if (r == CK_ENOMEM) {
        errs->nomem = true;
    } else if (r != 0) {
        struct ck__buf detail = {0};
        ck__buf_printf(&detail, "%s%s", why, r < 0 ? ck_err_message(&err) : "");
        if (detail.err || !detail.p)
            errs->nomem = true;
        else
            rule_error(errs, at, in_message ? ".messageExpression" : ".rule", rule, detail.p);
        ck__buf_release(&detail);
    }
    ck_err_release(&err);
    if (rule_ok && ctx.uncorrelatable && ck_cel_program_references(prog, "oldSelf")) {
        struct ck__buf detail = {0};
        ck__buf_printf(&detail,
                       "oldSelf cannot be used on the uncorrelatable portion of the schema "
                       "within %s",
                       ctx.uncorrelatable);
        if (detail.err || !detail.p)
            errs->nomem = true;
        else
            add(errs, CK_FIELD_INVALID, at, ".rule", text, true, detail.p);
        ck__buf_release(&detail);
    }
    ck_cel_program_free(prog);
    ck_cel_program_free(message);
}

/*
 * The x-kubernetes-validations rules of s: their own fields, as apiextensions
 * checks them, then, when nothing at or below s is wrong but the rules'
 * compilation (errs holds `before` errors from before s was visited, of
 * which cel_before came from compiling rules), each rule compiled.
 */
static void cel_rules(const json_t *s, const char *path, struct openapi_ctx ctx, bool root,
                      size_t before, size_t cel_before, struct ck_field_errors *errs)
{
    size_t i;
    json_t *rule;
    json_array_foreach(json_object_get(s, "x-kubernetes-validations"), i, rule)
    {
        char *at = item_path(errs, path, "x-kubernetes-validations", i);
        if (!at)
            continue;
        const char *text = json_string_value(json_object_get(rule, "rule"));
        const char *message = json_string_value(json_object_get(rule, "message"));
        const char *expression = json_string_value(json_object_get(rule, "messageExpression"));
        const char *reason = json_string_value(json_object_get(rule, "reason"));
        const char *field_path = json_string_value(json_object_get(rule, "fieldPath"));
        if (!text || blank(text))
            add(errs, CK_FIELD_REQUIRED, at, ".rule", NULL, false, "rule is not specified");
        else if (message && *message && blank(message))
            add(errs, CK_FIELD_INVALID, at, ".message", message, true,
                "message must be non-empty if specified");
        else if (message && trimmed_has_newlines(message))
            add(errs, CK_FIELD_INVALID, at, ".message", message, true,
                "message must not contain line breaks");
        else if (trimmed_has_newlines(text) && (!message || blank(message)))
            add(errs, CK_FIELD_REQUIRED, at, ".message", NULL, false,
                "message must be specified if rule contains line breaks");
        if (expression && *expression && blank(expression))
            add(errs, CK_FIELD_REQUIRED, at, ".messageExpression", NULL, false,
                "messageExpression must be non-empty if specified");
        if (json_object_get(rule, "reason") &&
            (!reason || (strcmp(reason, "FieldValueDuplicate") != 0 &&
                         strcmp(reason, "FieldValueForbidden") != 0 &&
                         strcmp(reason, "FieldValueInvalid") != 0 &&
                         strcmp(reason, "FieldValueRequired") != 0)))
            add(errs, CK_FIELD_NOT_SUPPORTED, at, ".reason", reason ? reason : "", true,
                "supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", "
                "\"FieldValueInvalid\", \"FieldValueRequired\"");
        if (field_path && *field_path && blank(field_path))
            add(errs, CK_FIELD_INVALID, at, ".fieldPath", field_path, true,
                "fieldPath must be non-empty if specified");
        if (field_path && has_newlines(field_path))
            add(errs, CK_FIELD_INVALID, at, ".fieldPath", field_path, true,
                "fieldPath must not contain line breaks");
        char why[160], *resolved = NULL;
        int r = field_path && *field_path
                    ? ck__crd_rule_field_path(s, field_path, &resolved, why, sizeof(why))
                    : 0;
        char *fp = r < 0 && r != CK_ENOMEM ? child_path(errs, at, "%s", ".fieldPath") : NULL;
        if (r == CK_ENOMEM)
            errs->nomem = true;
        else if (fp)
            ck_field_errors_add(errs, CK_FIELD_INVALID, fp, field_path, true,
                                "fieldPath must be a valid path: %s", why);
        free(fp);
        free(resolved);
        free(at);
    }
    size_t schema_errors = errs->len - before - (*ctx.cel_errors - cel_before);
    json_array_foreach(json_object_get(s, "x-kubernetes-validations"), i, rule)
    {
        if (schema_errors)
            break;
        char *at = item_path(errs, path, "x-kubernetes-validations", i);
        size_t n = errs->len;
        if (at)
            compile_rule(rule, at, s, root || flag(s, "x-kubernetes-embedded-resource"), ctx, errs);
        *ctx.cel_errors += errs->len - n;
        free(at);
    }
}

static void openapi(const json_t *s, const char *path, struct openapi_ctx ctx, bool root,
                    struct ck_field_errors *errs, int depth);

struct openapi_walk {
    struct ck_field_errors *errs;
    int depth;              /* the parent's */
    struct openapi_ctx ctx; /* the parent's */
    bool root;              /* the parent is the root */
    bool embedded;          /* the parent is an embedded resource */
};

/* A sub-schema that is not a property: items, additionalProperties, a value validation. */
static void visit_openapi(const json_t *sub, const char *at, const char *key, size_t index,
                          void *arg)
{
    (void)key;
    (void)index;
    const struct openapi_walk *w = arg;
    openapi(sub, at, w->ctx, false, w->errs, w->depth + 1);
}

/* A property: the root's and an embedded resource's apiVersion, kind and metadata are meta. */
static void visit_openapi_property(const json_t *sub, const char *at, const char *name,
                                   size_t index, void *arg)
{
    (void)index;
    const struct openapi_walk *w = arg;
    struct openapi_ctx ctx = w->ctx;
    bool meta = strcmp(name, "metadata") == 0 || strcmp(name, "kind") == 0 ||
                strcmp(name, "apiVersion") == 0;
    if ((w->root || w->embedded) && meta) {
        ctx.inside_meta = true;
        if (w->root) {
            ctx.allow_defaults = false;
            ctx.no_defaults_reason = strcmp(name, "metadata") == 0 ? "in top-level metadata"
                                     : strcmp(name, "kind") == 0   ? "in top-level kind"
                                                                   : "in top-level apiVersion";
        }
    }
    openapi(sub, at, ctx, false, w->errs, w->depth + 1);
}

/* The item property that a list-map key names; NULL for none. */
static const json_t *key_property(const json_t *items, const char *name)
{
    return name ? json_object_get(json_object_get(items, "properties"), name) : NULL;
}

static void openapi(const json_t *s, const char *path, struct openapi_ctx ctx, bool root,
                    struct ck_field_errors *errs, int depth)
{
    if (!json_is_object(s) || depth > MAX_DEPTH)
        return;
    size_t before = errs->len, cel_before = *ctx.cel_errors;
    const char *type = type_of(s);
    if (*type && !valid_type_name(type))
        add(errs, CK_FIELD_NOT_SUPPORTED, path, ".type", type, true,
            "supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", "
            "\"string\"");
    if (json_object_get(s, "default") && !ctx.allow_defaults) {
        char detail[128];
        snprintf(detail, sizeof(detail), "must not be set%s%s", ctx.no_defaults_reason ? " " : "",
                 ctx.no_defaults_reason ? ctx.no_defaults_reason : "");
        add(errs, CK_FIELD_FORBIDDEN, path, ".default", NULL, false, detail);
    }
    if (json_string_length(json_object_get(s, "id")) > 0)
        add(errs, CK_FIELD_FORBIDDEN, path, ".id", NULL, false, "id is not supported");
    if (json_object_get(s, "additionalItems"))
        add(errs, CK_FIELD_FORBIDDEN, path, ".additionalItems", NULL, false,
            "additionalItems is not supported");
    if (json_object_size(json_object_get(s, "patternProperties")) > 0)
        add(errs, CK_FIELD_FORBIDDEN, path, ".patternProperties", NULL, false,
            "patternProperties is not supported");
    if (json_object_size(json_object_get(s, "definitions")) > 0)
        add(errs, CK_FIELD_FORBIDDEN, path, ".definitions", NULL, false,
            "definitions is not supported");
    if (json_object_get(s, "dependencies"))
        add(errs, CK_FIELD_FORBIDDEN, path, ".dependencies", NULL, false,
            "dependencies is not supported");
    if (json_object_get(s, "$ref"))
        add(errs, CK_FIELD_FORBIDDEN, path, ".$ref", NULL, false, "$ref is not supported");
    if (strcmp(type, "null") == 0)
        add(errs, CK_FIELD_FORBIDDEN, path, ".type", NULL, false,
            "type cannot be set to null, use nullable as an alternative");
    const json_t *items = json_object_get(s, "items");
    if (json_is_array(items) && json_array_size(items) > 0)
        add(errs, CK_FIELD_FORBIDDEN, path, ".items", NULL, false,
            "items must be a schema object and not an array");
    if (ctx.inside_meta && flag(s, "x-kubernetes-embedded-resource"))
        add(errs, CK_FIELD_FORBIDDEN, path, ".x-kubernetes-embedded-resource", NULL, false,
            "must not be used inside of resource meta");
    if (flag(s, "uniqueItems"))
        add(errs, CK_FIELD_FORBIDDEN, path, ".uniqueItems", NULL, false,
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic");

    const json_t *props = json_object_get(s, "properties");
    const json_t *extra = json_object_get(s, "additionalProperties");
    struct openapi_walk w = {errs, depth, ctx, root, flag(s, "x-kubernetes-embedded-resource")};
    if (extra) {
        if (json_object_size(props) != 0 && !json_is_true(extra))
            add(errs, CK_FIELD_FORBIDDEN, path, ".additionalProperties", NULL, false,
                "additionalProperties and properties are mutual exclusive");
        struct openapi_walk extra_walk = w;
        if (ctx.inside_meta) {
            extra_walk.ctx.allow_defaults = false;
            extra_walk.ctx.no_defaults_reason =
                "inside additionalProperties applying to object metadata";
        }
        visit_child(errs, extra, path, ".additionalProperties", visit_openapi, &extra_walk);
    }
    each_property(errs, props, path, visit_openapi_property, &w);
    each_value_validation(errs, s, path, visit_openapi, &w);
    if (json_is_object(items)) {
        /* a list's elements correlate with their old values only by a list-type map's keys */
        const char *lt = json_string_value(json_object_get(s, "x-kubernetes-list-type"));
        struct openapi_walk item_walk = w;
        if (!item_walk.ctx.uncorrelatable && (!lt || strcmp(lt, "map") != 0))
            item_walk.ctx.uncorrelatable = path;
        visit_child(errs, items, path, ".items", visit_openapi, &item_walk);
    }
    if (json_is_false(json_object_get(s, "x-kubernetes-preserve-unknown-fields")))
        add(errs, CK_FIELD_INVALID, path, ".x-kubernetes-preserve-unknown-fields", "false", false,
            "must be true or undefined");

    const json_t *map_type = json_object_get(s, "x-kubernetes-map-type");
    if (map_type && strcmp(type, "object") != 0)
        type_must_be(errs, path, type, "must be object if x-kubernetes-map-type is specified");
    const char *map_type_s = json_string_value(map_type);
    if (map_type &&
        (!map_type_s || (strcmp(map_type_s, "atomic") != 0 && strcmp(map_type_s, "granular") != 0)))
        add(errs, CK_FIELD_NOT_SUPPORTED, path, ".x-kubernetes-map-type",
            map_type_s ? map_type_s : "", true, "supported values: \"atomic\", \"granular\"");

    const json_t *list_type = json_object_get(s, "x-kubernetes-list-type");
    const char *list_type_s = json_string_value(list_type);
    if (list_type && strcmp(type, "array") != 0) {
        type_must_be(errs, path, type, "must be array if x-kubernetes-list-type is specified");
    } else if (list_type_s && strcmp(list_type_s, "set") == 0 && json_is_object(items)) {
        const char *item_type = type_of(items);
        const char *item_list = json_string_value(json_object_get(items, "x-kubernetes-list-type"));
        const char *item_map = json_string_value(json_object_get(items, "x-kubernetes-map-type"));
        if (strcmp(item_type, "array") == 0 && item_list && strcmp(item_list, "atomic") != 0)
            add(errs, CK_FIELD_INVALID, path, ".items.x-kubernetes-list-type", item_list, true,
                "must be atomic as item of a list with x-kubernetes-list-type=set");
        if (strcmp(item_type, "object") == 0 && (!item_map || strcmp(item_map, "atomic") != 0))
            add(errs, CK_FIELD_INVALID, path, ".items.x-kubernetes-map-type", "set", true,
                "must be atomic as item of a list with x-kubernetes-list-type=set");
    }
    if (list_type &&
        (!list_type_s || (strcmp(list_type_s, "atomic") != 0 && strcmp(list_type_s, "set") != 0 &&
                          strcmp(list_type_s, "map") != 0)))
        add(errs, CK_FIELD_NOT_SUPPORTED, path, ".x-kubernetes-list-type",
            list_type_s ? list_type_s : "", true, "supported values: \"atomic\", \"set\", \"map\"");

    const json_t *map_keys = json_object_get(s, "x-kubernetes-list-map-keys");
    char *keys_text = json_array_size(map_keys) > 0
                          ? ck__json_dumps(map_keys, JSON_COMPACT | JSON_ENCODE_ANY, NULL)
                          : NULL;
    if (json_array_size(map_keys) > 0) {
        if (!list_type)
            add(errs, CK_FIELD_REQUIRED, path, ".x-kubernetes-list-type", NULL, false,
                "must be map if x-kubernetes-list-map-keys is non-empty");
        else if (!list_type_s || strcmp(list_type_s, "map") != 0)
            add(errs, CK_FIELD_INVALID, path, ".x-kubernetes-list-type",
                list_type_s ? list_type_s : "", true,
                "must be map if x-kubernetes-list-map-keys is non-empty");
    }
    if (list_type_s && strcmp(list_type_s, "map") == 0) {
        if (json_array_size(map_keys) == 0)
            add(errs, CK_FIELD_REQUIRED, path, ".x-kubernetes-list-map-keys", NULL, false,
                "must not be empty if x-kubernetes-list-type is map");
        if (!items)
            add(errs, CK_FIELD_REQUIRED, path, ".items", NULL, false,
                "must have a schema if x-kubernetes-list-type is map");
        if (json_is_object(items) && strcmp(type_of(items), "object") != 0)
            add(errs, CK_FIELD_INVALID, path, ".items.type", type_of(items), true,
                "must be object if parent array's x-kubernetes-list-type is map");
        if (json_is_object(items) && strcmp(type_of(items), "object") == 0) {
            size_t i;
            json_t *key;
            json_array_foreach(map_keys, i, key)
            {
                const char *name = json_string_value(key);
                const json_t *prop = key_property(items, name);
                if (prop) {
                    const char *t = type_of(prop);
                    if (strcmp(t, "array") == 0 || strcmp(t, "object") == 0)
                        add_below(errs, CK_FIELD_INVALID, path, ".items.properties[%s].type", name,
                                  "object", true,
                                  "must be a scalar type if parent array's x-kubernetes-list-type "
                                  "is map");
                } else {
                    add(errs, CK_FIELD_INVALID, path, ".x-kubernetes-list-map-keys",
                        keys_text ? keys_text : "", false,
                        "entries must all be names of item properties");
                }
                for (size_t j = 0; j < i; j++)
                    if (json_equal(key, json_array_get(map_keys, j))) {
                        add(errs, CK_FIELD_INVALID, path, ".x-kubernetes-list-map-keys",
                            keys_text ? keys_text : "", false,
                            "must not contain duplicate entries");
                        break;
                    }
            }
        }
    }
    /* set and map lists: items not nullable, map keys required or defaulted, not nullable */
    if (json_is_object(items) && list_type_s &&
        (strcmp(list_type_s, "set") == 0 || strcmp(list_type_s, "map") == 0)) {
        if (flag(items, "nullable")) {
            char detail[64];
            snprintf(detail, sizeof(detail), "cannot be nullable when x-kubernetes-list-type is %s",
                     list_type_s);
            add(errs, CK_FIELD_FORBIDDEN, path, ".items.nullable", NULL, false, detail);
        }
        if (strcmp(list_type_s, "map") == 0) {
            const json_t *required = json_object_get(items, "required");
            size_t i;
            json_t *key;
            json_array_foreach(map_keys, i, key)
            {
                const char *name = json_string_value(key);
                const json_t *prop = key_property(items, name);
                if (!prop)
                    continue;
                bool is_required = false;
                size_t r;
                json_t *req;
                json_array_foreach(required, r, req)
                {
                    is_required = is_required || json_equal(req, key);
                }
                if (!is_required && !json_object_get(prop, "default"))
                    add_below(errs, CK_FIELD_REQUIRED, path, ".items.properties[%s].default", name,
                              NULL, false,
                              "this property is in x-kubernetes-list-map-keys, so it must have a "
                              "default or be a required property");
                if (flag(prop, "nullable"))
                    add_below(errs, CK_FIELD_FORBIDDEN, path, ".items.properties[%s].nullable",
                              name, NULL, false,
                              "this property is in x-kubernetes-list-map-keys, so it cannot be "
                              "nullable");
            }
        }
    }
    free(keys_text);
    cel_rules(s, path, ctx, root, before, cel_before, errs);
}

void ck_crd_schema_check(const json_t *schema, const char *path, struct ck_field_errors *errs)
{
    if (!path)
        path = "";
    if (!json_is_object(schema)) {
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, path, NULL, false, "must be an object");
        return;
    }
    if (flag(schema, "nullable"))
        add(errs, CK_FIELD_FORBIDDEN, path, ".nullable", NULL, false,
            "nullable cannot be true at the root");
    /* 1: structural, sorted as Kubernetes sorts them */
    struct ck_field_errors structural = {0};
    invariants(schema, ROOT_LEVEL, path, &structural, 0);
    value_completeness(schema, schema, path, path, &structural, 0);
    if (structural.len > 1)
        qsort(structural.items, structural.len, sizeof(structural.items[0]), compare_rendered);
    bool is_structural = structural.len == 0 && !structural.nomem;
    for (size_t i = 0; i < structural.len; i++) {
        struct ck_field_error *e = &structural.items[i];
        ck_field_errors_add(errs, e->type, e->field, e->value, false, e->detail ? "%s" : NULL,
                            e->detail);
    }
    if (structural.nomem)
        errs->nomem = true;
    ck_field_errors_release(&structural);
    /* 2: defaults, only on a structural schema */
    if (is_structural)
        defaults(schema, path, true, errs, 0);
    /* 3: the OpenAPI checks */
    size_t cel_errors = 0;
    struct openapi_ctx ctx = {.allow_defaults = true, .cel_errors = &cel_errors};
    openapi(schema, path, ctx, true, errs, 0);
}
