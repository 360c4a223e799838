/*
 * schema.c - OpenAPI v3 schemas driving decoding, pruning, defaulting and
 * validation of API objects.
 *
 * Kubernetes decodes a request body into a Go struct: JSON syntax errors,
 * values of the wrong type and (under fieldValidation=Strict) unknown or
 * duplicate fields are 400 BadRequest; null decodes as "absent"; unknown
 * fields vanish (with a warning under Warn). Then defaulting fills absent
 * fields, then validation reports 422 field errors. ckube has no Go structs,
 * so the one description of each kind - its schema - plays the struct's
 * part in every step, and the same schemas are what /openapi/v3 serves.
 *
 * Keywords understood: type, format, properties, required, items,
 * additionalProperties, $ref, allOf [{$ref}], default, enum, nullable,
 * minimum, maximum, x-kubernetes-int-or-string,
 * x-kubernetes-preserve-unknown-fields (anything goes below), and
 * x-ckube-always-emit (fields emitted with their zero value when absent, as
 * Go emits fields without omitempty). Others (descriptions, patch keys,
 * list types) are carried for OpenAPI and the patch code, not read here.
 *
 * Custom resources: the inline parts of a kind schema marked
 * x-ckube-custom-resource (everything but what a $ref reaches, such as
 * ObjectMeta) are handled as apiextensions handles a CRD's structural
 * schema: decoding only prunes (a value of the wrong type is kept, and
 * validation reports it as a 422 in kube-openapi's words), null is kept
 * where the schema is nullable and otherwise replaced by the default or
 * dropped, x-kubernetes-preserve-unknown-fields keeps unknown fields but
 * still prunes and defaults the specified ones, x-kubernetes-embedded-resource
 * keeps apiVersion, kind and metadata, and validation honours pattern,
 * format, min/maxLength, min/maxItems, uniqueItems, min/maxProperties,
 * exclusiveMinimum/Maximum, multipleOf, allOf/anyOf/oneOf/not and the list
 * types set and map.
 *
 * A set may lie over another (ck_schemas_new_layered()): a custom resource's
 * few schemas resolve ObjectMeta and the other built-in names through the
 * set below, so 1,000 CRDs cost 1,000 small sets, not 1,000 copies.
 *
 * Threading: a set is immutable after ck_schemas_new(); all functions only
 * read it. The compiled patterns of custom resources live in formats.c's
 * process-wide cache, which takes its own lock.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"
#include "internal.h"

#define REF_PREFIX "#/components/schemas/"
#define MAX_DEPTH  64

struct ck_schemas {
    json_t *all;                     /* name -> schema */
    const struct ck_schemas *parent; /* looked up after all; borrowed (a layered set) */
    uint64_t serial;                 /* unique in the process, never reused */
    json_t *reaches;             /* name -> CK__REACHES_* bits of the keywords anywhere below it */
    json_t *defaulted;           /* name -> [the properties with a default, in schema order] */
    struct node_answer *answers; /* every node of the set's own schemas, by address */
    size_t answers_mask;         /* slots - 1 (a power of two, at least twice the nodes) */
};

/* Where a node of the set leads through $ref / allOf, found once when the set is made. */
struct node_answer {
    const json_t *node; /* NULL: an empty slot */
    const json_t *resolved;
    const char *name; /* the last name referenced; NULL when the node refers to none */
};

uint64_t ck__schemas_serial(const struct ck_schemas *set)
{
    return set->serial;
}

/* The schema called name in the set or the sets below it, or NULL. */
static json_t *lookup(const struct ck_schemas *set, const char *name)
{
    for (; set; set = set->parent) {
        json_t *schema = json_object_get(set->all, name);
        if (schema)
            return schema;
    }
    return NULL;
}

/* ---- the set ------------------------------------------------------------ */

static const char *ref_of(const json_t *schema)
{
    const char *ref = json_string_value(json_object_get(schema, "$ref"));
    if (!ref) {
        json_t *all_of = json_object_get(schema, "allOf");
        if (json_array_size(all_of) == 1)
            ref = json_string_value(json_object_get(json_array_get(all_of, 0), "$ref"));
    }
    if (ref && strncmp(ref, REF_PREFIX, strlen(REF_PREFIX)) == 0)
        return ref + strlen(REF_PREFIX);
    return ref;
}

/*
 * Follows $ref (and single-element allOf) to the schema that describes the
 * value. *ret_name, when given, is set to the last referenced name.
 */
/* Follows $ref (and single-element allOf) from schema, looking each name up. */
static const json_t *follow_refs(const struct ck_schemas *set, const json_t *schema,
                                 const char **ret_name)
{
    for (int hops = 0; schema && hops < MAX_DEPTH; hops++) {
        const char *ref = ref_of(schema);
        if (!ref)
            return schema;
        if (ret_name)
            *ret_name = ref;
        schema = lookup(set, ref);
    }
    return schema;
}

static size_t node_slot(const void *node, size_t mask)
{
    uint64_t h = (uint64_t)(uintptr_t)node;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdu;
    h ^= h >> 33;
    return (size_t)h & mask;
}

/* The answer for node when it belongs to set itself (not a parent), else NULL. */
static const struct node_answer *answer_of(const struct ck_schemas *set, const json_t *node)
{
    if (!set->answers)
        return NULL;
    for (size_t i = node_slot(node, set->answers_mask);; i = (i + 1) & set->answers_mask) {
        const struct node_answer *a = &set->answers[i];
        if (a->node == node || !a->node)
            return a->node ? a : NULL;
    }
}

/*
 * Follows $ref (and single-element allOf) to the schema that describes the
 * value. *ret_name, when given, is set to the last referenced name. A node of
 * the set's schemas (or of a set below it) is answered from what was found
 * when the set was made; any other node (one built for a request) is followed.
 */
static const json_t *resolve(const struct ck_schemas *set, const json_t *schema,
                             const char **ret_name)
{
    if (!set)
        return schema; /* a lone CRD schema (structural.c): no references to follow */
    for (const struct ck_schemas *s = set; s; s = s->parent) {
        const struct node_answer *a = answer_of(s, schema);
        if (a) {
            if (ret_name && a->name)
                *ret_name = a->name;
            return a->resolved;
        }
    }
    return follow_refs(set, schema, ret_name);
}

bool ck__schema_owns(const struct ck_schemas *set, const json_t *node)
{
    for (; set; set = set->parent)
        if (answer_of(set, node))
            return true;
    return false;
}

static size_t count_nodes(const json_t *v, int depth)
{
    size_t n = json_is_object(v) ? 1 : 0;
    if (depth > MAX_DEPTH)
        return n;
    const char *key;
    size_t i;
    json_t *child;
    if (json_is_object(v))
        json_object_foreach((json_t *)v, key, child) n += count_nodes(child, depth + 1);
    else if (json_is_array(v))
        json_array_foreach(v, i, child) n += count_nodes(child, depth + 1);
    return n;
}

static void add_answers(struct ck_schemas *set, const json_t *v, int depth)
{
    if (json_is_object(v)) {
        size_t i = node_slot(v, set->answers_mask);
        while (set->answers[i].node && set->answers[i].node != v)
            i = (i + 1) & set->answers_mask;
        if (set->answers[i].node)
            return; /* a node shared by two places: answered once */
        const char *name = NULL;
        const json_t *resolved = follow_refs(set, v, &name);
        set->answers[i] = (struct node_answer){v, resolved, name};
    }
    if (depth > MAX_DEPTH)
        return;
    const char *key;
    size_t i;
    json_t *child;
    if (json_is_object(v))
        json_object_foreach((json_t *)v, key, child) add_answers(set, child, depth + 1);
    else if (json_is_array(v))
        json_array_foreach(v, i, child) add_answers(set, child, depth + 1);
}

/* Fills set->answers for every node of the set's own schemas. 0 or CK_ENOMEM. */
static int find_answers(struct ck_schemas *set)
{
    size_t n = count_nodes(set->all, 0), slots = 16;
    while (slots < 2 * n)
        slots *= 2;
    set->answers = calloc(slots, sizeof(*set->answers));
    if (!set->answers)
        return CK_ENOMEM;
    set->answers_mask = slots - 1;
    add_answers(set, set->all, 0);
    return 0;
}

const json_t *ck__schema_resolve(const struct ck_schemas *set, const json_t *schema)
{
    return schema ? resolve(set, schema, NULL) : NULL;
}

/* ---- what the walks need not enter --------------------------------------- */

/*
 * For each schema of a set, which keywords appear anywhere below it, through any
 * further reference: the gate walks (gates.c) need not enter a value no gate keyword
 * reaches, nor defaulting one no default reaches. Found once, when the set is made.
 */
static unsigned keyword_bit(const char *key)
{
    if (strcmp(key, "x-ckube-feature-gate") == 0 ||
        strcmp(key, "x-ckube-feature-gated-values") == 0)
        return CK__REACHES_GATES;
    if (strcmp(key, "default") == 0 || strcmp(key, "x-ckube-always-emit") == 0)
        return CK__REACHES_DEFAULTS;
    return 0;
}

#define REACHES_ALL (CK__REACHES_GATES | CK__REACHES_DEFAULTS)

static unsigned named_reach(struct ck_schemas *set, const char *name, json_t *visiting);

/* The keywords in v, or in a schema v references. */
static unsigned tree_reach(struct ck_schemas *set, const json_t *v, json_t *visiting)
{
    unsigned found = 0;
    if (json_is_array(v)) {
        size_t i;
        json_t *item;
        json_array_foreach(v, i, item) found |= tree_reach(set, item, visiting);
        return found;
    }
    if (!json_is_object(v))
        return 0;
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)v, key, value)
    {
        found |= keyword_bit(key);
        if (strcmp(key, "$ref") == 0 && json_is_string(value)) {
            const char *ref = json_string_value(value);
            if (strncmp(ref, REF_PREFIX, strlen(REF_PREFIX)) == 0)
                ref += strlen(REF_PREFIX);
            found |= named_reach(set, ref, visiting);
        } else {
            found |= tree_reach(set, value, visiting);
        }
        if (found == REACHES_ALL)
            break;
    }
    return found;
}

/*
 * What schema `name` reaches. A schema this set does not hold was settled by the
 * set below; one that refers back to itself reaches everything (so nothing is ever
 * skipped wrongly), and so does every schema when memory runs out.
 */
static unsigned named_reach(struct ck_schemas *set, const char *name, json_t *visiting)
{
    const json_t *own = json_object_get(set->all, name);
    if (!own) {
        for (const struct ck_schemas *below = set->parent; below; below = below->parent)
            if (json_object_get(below->all, name)) {
                const json_t *known = json_object_get(below->reaches, name);
                return known ? (unsigned)json_integer_value(known) : REACHES_ALL;
            }
        return 0; /* no such schema (check_refs refuses it) */
    }
    const json_t *known = json_object_get(set->reaches, name);
    if (known)
        return (unsigned)json_integer_value(known);
    if (json_object_get(visiting, name) || json_object_set_new(visiting, name, json_true()) < 0)
        return REACHES_ALL;
    unsigned found = tree_reach(set, own, visiting);
    json_object_del(visiting, name);
    if (json_object_set_new(set->reaches, name, json_integer(found)) < 0)
        return REACHES_ALL;
    return found;
}

static const json_t *default_of(const struct ck_schemas *set, const json_t *prop);

/* The properties of schema that have a default; NULL when out of memory. */
static json_t *defaulted_properties(const struct ck_schemas *set, const json_t *schema)
{
    json_t *keys = json_array();
    const char *key;
    json_t *prop;
    json_object_foreach(json_object_get(schema, "properties"), key, prop)
    {
        if (keys && default_of(set, prop) && json_array_append_new(keys, json_string(key)) < 0)
            keys = (json_decref(keys), NULL);
    }
    return keys;
}

/* What the walks may skip, found for every schema of the set (none when out of memory). */
static void find_reaches(struct ck_schemas *set)
{
    json_t *visiting = json_object();
    const char *name;
    json_t *schema;
    json_object_foreach(set->all, name, schema)
    {
        if (visiting)
            named_reach(set, name, visiting);
        json_t *keys = defaulted_properties(set, schema);
        if (keys && json_object_set_new(set->defaulted, name, keys) < 0)
            break;
    }
    json_decref(visiting);
}

/* The properties with a default of the schema named name, or NULL when not known. */
static const json_t *defaulted_of(const struct ck_schemas *set, const char *name)
{
    for (; set; set = set->parent)
        if (json_object_get(set->all, name))
            return json_object_get(set->defaulted, name);
    return NULL;
}

bool ck__schema_reaches(const struct ck_schemas *set, const json_t *schema, unsigned what)
{
    const char *ref = NULL, *key;
    json_t *value;
    json_object_foreach((json_t *)schema, key, value)
    {
        /* only a property that is a reference, described and defaulted, is settled */
        if (strcmp(key, "description") != 0 && strcmp(key, "default") != 0 &&
            strcmp(key, "$ref") != 0 && strcmp(key, "allOf") != 0)
            return true;
    }
    if (!(ref = ref_of(schema)))
        return true;
    for (; set; set = set->parent)
        if (json_object_get(set->all, ref)) {
            const json_t *known = json_object_get(set->reaches, ref);
            return !known || ((unsigned)json_integer_value(known) & what) != 0;
        }
    return true;
}

/* Checks that every $ref below schema names a schema of the set. */
static int check_refs(const struct ck_schemas *set, const json_t *schema, const char *owner,
                      struct ck_err *reterr)
{
    if (json_is_array(schema)) {
        size_t i;
        json_t *item;
        json_array_foreach(schema, i, item)
        {
            int r = check_refs(set, item, owner, reterr);
            if (r < 0)
                return r;
        }
        return 0;
    }
    if (!json_is_object(schema))
        return 0;
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)schema, key, value)
    {
        if (strcmp(key, "$ref") == 0) {
            const char *ref = json_string_value(value);
            if (!ref || strncmp(ref, REF_PREFIX, strlen(REF_PREFIX)) != 0 ||
                !lookup(set, ref + strlen(REF_PREFIX)))
                return ck_err_set(reterr, CK_EINVAL, "schema %s: unresolved $ref %s", owner,
                                  ref ? ref : "(not a string)");
        } else if (strcmp(key, "default") != 0 && strcmp(key, "enum") != 0) {
            int r = check_refs(set, value, owner, reterr);
            if (r < 0)
                return r;
        }
    }
    return 0;
}

int ck_schemas_new(const char *const *documents, size_t n_documents, struct ck_schemas **ret_set,
                   struct ck_err *reterr)
{
    return ck_schemas_new_layered(NULL, documents, n_documents, ret_set, reterr);
}

int ck_schemas_new_layered(const struct ck_schemas *parent, const char *const *documents,
                           size_t n_documents, struct ck_schemas **ret_set, struct ck_err *reterr)
{
    struct ck_schemas *set = calloc(1, sizeof(*set));
    if (!set || !(set->all = json_object())) {
        free(set);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    set->parent = parent;
    static _Atomic uint64_t next_serial = 1;
    set->serial = atomic_fetch_add(&next_serial, 1);
    int r = 0;
    for (size_t i = 0; i < n_documents && r == 0; i++) {
        json_error_t jerr;
        json_t *doc = json_loads(documents[i], JSON_REJECT_DUPLICATES, &jerr);
        if (!json_is_object(doc)) {
            r = ck_err_set(reterr, CK_EINVAL, "schema document %zu: %s (line %d)", i,
                           doc ? "not an object" : jerr.text, jerr.line);
            json_decref(doc);
            break;
        }
        const char *name;
        json_t *schema;
        json_object_foreach(doc, name, schema)
        {
            if (lookup(set, name)) {
                r = ck_err_set(reterr, CK_EINVAL, "schema %s defined twice", name);
                break;
            }
            json_object_set(set->all, name, schema);
        }
        json_decref(doc);
    }
    const char *name;
    json_t *schema;
    json_object_foreach(set->all, name, schema)
    {
        if (r == 0)
            r = check_refs(set, schema, name, reterr);
    }
    if (r == 0 && (!(set->reaches = json_object()) || !(set->defaulted = json_object())))
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (r < 0) {
        ck_schemas_free(set);
        return r;
    }
    if (r == 0 && find_answers(set) < 0)
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (r < 0) {
        ck_schemas_free(set);
        return r;
    }
    find_reaches(set);
    *ret_set = set;
    return 0;
}

struct ck_schemas *ck_schemas_free(struct ck_schemas *set)
{
    if (set) {
        json_decref(set->all);
        json_decref(set->reaches);
        json_decref(set->defaulted);
        free(set->answers);
        free(set);
    }
    return NULL;
}

const json_t *ck_schemas_get(const struct ck_schemas *set, const char *name)
{
    return lookup(set, name);
}

const struct ck_schemas *ck_schemas_parent(const struct ck_schemas *set)
{
    return set->parent;
}

const json_t *ck_schemas_all(const struct ck_schemas *set)
{
    return set->all;
}

int ck_field_validation_parse(const char *text, enum ck_field_validation *ret)
{
    if (!text || !*text || strcmp(text, "Warn") == 0)
        *ret = CK_FIELD_VALIDATION_WARN;
    else if (strcmp(text, "Strict") == 0)
        *ret = CK_FIELD_VALIDATION_STRICT;
    else if (strcmp(text, "Ignore") == 0)
        *ret = CK_FIELD_VALIDATION_IGNORE;
    else
        return CK_EINVAL;
    return 0;
}

void ck_warnings_add(struct ck_warnings *w, const char *fmt, ...)
{
    char **items = realloc(w->items, (w->len + 1) * sizeof(*items));
    if (!items)
        return;
    w->items = items;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&w->items[w->len], fmt, ap) >= 0)
        w->len++;
    va_end(ap);
}

void ck_warnings_release(struct ck_warnings *w)
{
    for (size_t i = 0; i < w->len; i++)
        free(w->items[i]);
    free(w->items);
    memset(w, 0, sizeof(*w));
}

/* ---- field paths ------------------------------------------------------- */

/* A JSON path being walked (`spec.containers[0].name`); truncates, never fails. */
struct path {
    char buf[1024];
    size_t len;
};

static size_t path_push_field(struct path *p, const char *name)
{
    size_t saved = p->len;
    p->len = ck__path_push(p->buf, sizeof(p->buf), p->len, p->len ? "." : "", name, NULL);
    return saved;
}

static size_t path_push_index(struct path *p, size_t i)
{
    size_t saved = p->len;
    p->len = ck__path_push_index(p->buf, sizeof(p->buf), p->len, i);
    return saved;
}

static size_t path_push_key(struct path *p, const char *key)
{
    size_t saved = p->len;
    p->len = ck__path_push(p->buf, sizeof(p->buf), p->len, "[", key, "]");
    return saved;
}

static void path_pop(struct path *p, size_t saved)
{
    p->len = saved;
    p->buf[saved] = '\0';
}

/* ---- decoding ----------------------------------------------------------- */

struct decode {
    const struct ck_schemas *set;
    enum ck_field_validation validation;
    struct ck_warnings *warnings;
    char *unknown;    /* `unknown field "a", unknown field "b"` collected under Strict */
    char *type_error; /* the first type error, Go's wording */
    bool nomem;       /* an allocation failed: the answer is CK_ENOMEM, whatever else */
    /* a custom resource's unknown fields, reported sorted at the end as apiextensions does */
    bool collect_unknown;
    char **unknown_paths;
    size_t n_unknown_paths;
};

static const char *json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "bool";
    default:
        return "null";
    }
}

/* The last dotted component of a schema name: the Go type's name. */
static const char *short_name(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot ? dot + 1 : name;
}

/* The Go type a schema decodes into, for error messages. */
static const char *go_type(const json_t *schema, const char *ref_name)
{
    const char *type = json_string_value(json_object_get(schema, "type"));
    const char *format = json_string_value(json_object_get(schema, "format"));
    if (ref_name && (!type || strcmp(type, "object") == 0))
        return short_name(ref_name);
    if (!type)
        return "interface {}";
    if (strcmp(type, "integer") == 0)
        return format && strcmp(format, "int32") == 0 ? "int32" : "int64";
    if (strcmp(type, "number") == 0)
        return "float64";
    if (strcmp(type, "boolean") == 0)
        return "bool";
    if (strcmp(type, "array") == 0)
        return "[]";
    if (strcmp(type, "object") == 0)
        return "map[string]";
    return type;
}

static void type_error(struct decode *d, const json_t *v, const json_t *schema,
                       const char *ref_name, const char *parent, const struct path *p)
{
    if (d->type_error)
        return;
    int n;
    if (p->len == 0)
        n = asprintf(&d->type_error, "json: cannot unmarshal %s into Go value of type %s",
                     json_kind(v), go_type(schema, ref_name));
    else
        n = asprintf(&d->type_error,
                     "json: cannot unmarshal %s into Go struct field %s.%s of type %s",
                     json_kind(v), parent ? parent : "Object", p->buf, go_type(schema, ref_name));
    if (n < 0) {
        d->type_error = NULL;
        d->nomem = true;
    }
}

static void unknown_field(struct decode *d, const struct path *p)
{
    if (d->collect_unknown) {
        char **paths = realloc(d->unknown_paths, (d->n_unknown_paths + 1) * sizeof(*paths));
        char *copy = strdup(p->buf);
        if (paths)
            d->unknown_paths = paths;
        if (!paths || !copy) {
            free(copy);
            d->nomem = true;
            return;
        }
        d->unknown_paths[d->n_unknown_paths++] = copy;
        return;
    }
    if (d->validation == CK_FIELD_VALIDATION_WARN)
        ck_warnings_add(d->warnings, "unknown field \"%s\"", p->buf);
    if (d->validation != CK_FIELD_VALIDATION_STRICT)
        return;
    char *more = NULL;
    if (asprintf(&more, "%s%sunknown field \"%s\"", d->unknown ? d->unknown : "",
                 d->unknown ? ", " : "", p->buf) >= 0) {
        free(d->unknown);
        d->unknown = more;
    } else {
        d->nomem = true;
    }
}

/*
 * Parses an RFC 3339 time and rewrites it in UTC: whole seconds for Time,
 * microseconds for MicroTime. Returns false when it is not a valid time;
 * sets d->nomem when it could not be rewritten.
 */
static bool normalise_time(struct decode *d, json_t *v, bool micro)
{
    int64_t sec;
    long usec;
    if (ck__time_parse(json_string_value(v), &sec, &usec) < 0)
        return false;
    char buf[CK__TIME_LEN];
    if (json_string_set(v, ck__time_format(sec, micro ? usec : -1, buf, sizeof(buf))) < 0)
        d->nomem = true;
    return true;
}

static bool is_time_schema(const char *ref_name, bool *micro)
{
    if (!ref_name)
        return false;
    *micro = strcmp(ref_name, "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime") == 0;
    return *micro || strcmp(ref_name, "io.k8s.apimachinery.pkg.apis.meta.v1.Time") == 0;
}

static json_t *zero_value(const struct ck_schemas *set, const json_t *schema);

static void decode_value(struct decode *d, const json_t *schema_in, json_t *v, const char *parent,
                         struct path *p, int depth, bool cr);

static const json_t *default_of(const struct ck_schemas *set, const json_t *prop);

/* The schema (or the one it references) says nullable: true. */
static bool is_nullable(const struct ck_schemas *set, const json_t *schema)
{
    return json_is_true(json_object_get(schema, "nullable")) ||
           json_is_true(json_object_get(resolve(set, schema, NULL), "nullable"));
}

static bool meta_field(const char *key)
{
    return strcmp(key, "apiVersion") == 0 || strcmp(key, "kind") == 0 ||
           strcmp(key, "metadata") == 0;
}

static void decode_object(struct decode *d, const json_t *schema, const char *self_name,
                          json_t *obj, struct path *p, int depth)
{
    const json_t *props = json_object_get(schema, "properties");
    const json_t *extra = json_object_get(schema, "additionalProperties");
    const char *key;
    json_t *value;
    void *tmp;
    json_object_foreach_safe(obj, tmp, key, value)
    {
        const json_t *child = json_object_get(props, key);
        bool map_entry = !child && json_is_object(extra);
        size_t saved = map_entry ? path_push_key(p, key) : path_push_field(p, key);
        if (child || map_entry) {
            if (json_is_null(value))
                json_object_del(obj, key); /* Go decodes null as absent */
            else
                decode_value(d, child ? child : extra, value, self_name, p, depth + 1, false);
        } else if (json_is_true(extra)) {
            /* additionalProperties: true keeps anything */
        } else {
            unknown_field(d, p);
            json_object_del(obj, key);
        }
        path_pop(p, saved);
    }
}

static void prune_custom(struct decode *d, const json_t *schema, json_t *v, const char *parent,
                         struct path *p, int depth, bool skip);

/*
 * A custom resource's value, pruned as apiextensions prunes: by the
 * structure alone, whatever the value's type (a value of the wrong type is
 * kept for validation to report; an object where a string belongs loses
 * every field). schema may be NULL (nothing is known below: every field is
 * unknown). Under x-kubernetes-preserve-unknown-fields (skip) unknown fields
 * stay and the specified ones are still pruned; array elements inherit it.
 * Nulls are kept where nullable or defaulted, else dropped from objects.
 * The root and embedded resources keep apiVersion, kind and metadata (the
 * root's metadata, a $ref to ObjectMeta, is decoded as Go decodes it).
 */
static void prune_custom(struct decode *d, const json_t *schema, json_t *v, const char *parent,
                         struct path *p, int depth, bool skip)
{
    if (depth > MAX_DEPTH)
        return;
    skip = skip || json_is_true(json_object_get(schema, "x-kubernetes-preserve-unknown-fields"));
    if (json_is_array(v)) {
        const json_t *items = json_object_get(schema, "items");
        if (!json_is_object(items))
            items = NULL;
        if (skip && !items)
            return;
        size_t i;
        json_t *item;
        json_array_foreach(v, i, item)
        {
            size_t saved = path_push_index(p, i);
            if (skip)
                prune_custom(d, resolve(d->set, items, NULL), item, parent, p, depth + 1, true);
            else if (items)
                decode_value(d, items, item, parent, p, depth + 1, true);
            else
                prune_custom(d, NULL, item, parent, p, depth + 1, false);
            path_pop(p, saved);
        }
        return;
    }
    if (!json_is_object(v))
        return;
    const json_t *props = json_object_get(schema, "properties");
    const json_t *extra = json_object_get(schema, "additionalProperties");
    bool embedded = json_is_true(json_object_get(schema, "x-kubernetes-embedded-resource"));
    const char *key;
    json_t *value;
    void *tmp;
    json_object_foreach_safe(v, tmp, key, value)
    {
        const json_t *child = json_object_get(props, key);
        if (meta_field(key) && (embedded || (depth == 0 && !child)))
            continue; /* the resource's own type and object meta */
        if (!schema || (!child && !extra)) {
            if (!skip) {
                size_t saved = path_push_field(p, key);
                unknown_field(d, p);
                path_pop(p, saved);
                json_object_del(v, key);
            }
            continue;
        }
        const json_t *value_schema = child ? child : (json_is_object(extra) ? extra : NULL);
        size_t saved = path_push_field(p, key);
        if (json_is_null(value)) {
            /* kept where nullable or where defaulting replaces it, else dropped */
            if (value_schema && !is_nullable(d->set, value_schema) &&
                !default_of(d->set, value_schema))
                json_object_del(v, key);
        } else if (value_schema) {
            decode_value(d, value_schema, value, parent, p, depth + 1, true);
        } else {
            prune_custom(d, NULL, value, parent, p, depth + 1, false);
        }
        path_pop(p, saved);
    }
}

static void decode_value(struct decode *d, const json_t *schema_in, json_t *v, const char *parent,
                         struct path *p, int depth, bool cr)
{
    const char *ref_name = NULL;
    const json_t *schema = resolve(d->set, schema_in, &ref_name);
    if (!schema || depth > MAX_DEPTH)
        return;
    if (cr && ref_name && depth > 0)
        cr = false; /* a referenced built-in type (ObjectMeta) decodes as Go decodes it */
    if (cr) {
        prune_custom(d, schema, v, parent, p, depth, false);
        return;
    }
    if (json_is_true(json_object_get(schema, "x-kubernetes-int-or-string"))) {
        if (!json_is_integer(v) && !json_is_string(v) && !json_is_real(v))
            type_error(d, v, schema, "IntOrString", parent, p);
        return;
    }
    const char *type = json_string_value(json_object_get(schema, "type"));
    bool preserve = json_is_true(json_object_get(schema, "x-kubernetes-preserve-unknown-fields"));
    if (!type && json_object_get(schema, "properties"))
        type = "object";
    if (!type)
        return;

    bool micro;
    if (strcmp(type, "object") == 0) {
        if (!json_is_object(v))
            type_error(d, v, schema, ref_name, parent, p);
        else if (!preserve)
            decode_object(d, schema, ref_name ? short_name(ref_name) : parent, v, p, depth);
    } else if (strcmp(type, "array") == 0) {
        if (!json_is_array(v)) {
            type_error(d, v, schema, ref_name, parent, p);
            return;
        }
        const json_t *items = json_object_get(schema, "items");
        size_t i;
        json_t *item;
        json_array_foreach(v, i, item)
        {
            size_t saved = path_push_index(p, i);
            if (json_is_null(item)) { /* Go stores the element's zero value */
                if (json_array_set_new(v, i, zero_value(d->set, items)) < 0)
                    d->nomem = true;
            } else if (items && !preserve) {
                decode_value(d, items, item, parent, p, depth + 1, false);
            }
            path_pop(p, saved);
        }
    } else if (strcmp(type, "string") == 0) {
        if (!json_is_string(v))
            type_error(d, v, schema, ref_name, parent, p);
        else if (is_time_schema(ref_name, &micro) && !normalise_time(d, v, micro) && !d->type_error)
            if (asprintf(&d->type_error,
                         "parsing time \"%s\" as \"2006-01-02T15:04:05Z07:00\": not RFC 3339 (%s)",
                         json_string_value(v), p->buf) < 0) {
                d->type_error = NULL;
                d->nomem = true;
            }
    } else if (strcmp(type, "integer") == 0) {
        const char *format = json_string_value(json_object_get(schema, "format"));
        bool int32 = format && strcmp(format, "int32") == 0;
        json_int_t n = json_integer_value(v);
        if (!json_is_integer(v) || (int32 && (n < INT32_MIN || n > INT32_MAX)))
            type_error(d, v, schema, ref_name, parent, p);
    } else if (strcmp(type, "number") == 0) {
        if (!json_is_number(v))
            type_error(d, v, schema, ref_name, parent, p);
    } else if (strcmp(type, "boolean") == 0) {
        if (!json_is_boolean(v))
            type_error(d, v, schema, ref_name, parent, p);
    }
}

/* ObjectMeta's unknown fields first, then the rest in byte order (apiextensions' order). */
static int compare_unknown_paths(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    bool mx = strncmp(x, "metadata.", 9) == 0, my = strncmp(y, "metadata.", 9) == 0;
    if (mx != my)
        return mx ? -1 : 1;
    return strcmp(x, y);
}

/* Reports a custom resource's unknown fields, sorted, as warnings or the Strict error. */
static void report_unknown(struct decode *d)
{
    if (d->n_unknown_paths > 1)
        qsort(d->unknown_paths, d->n_unknown_paths, sizeof(*d->unknown_paths),
              compare_unknown_paths);
    d->collect_unknown = false;
    struct path p;
    for (size_t i = 0; i < d->n_unknown_paths; i++) {
        snprintf(p.buf, sizeof(p.buf), "%s", d->unknown_paths[i]);
        p.len = strlen(p.buf);
        unknown_field(d, &p);
        free(d->unknown_paths[i]);
    }
    free(d->unknown_paths);
    d->unknown_paths = NULL;
    d->n_unknown_paths = 0;
}

/* Pulls the duplicated key's name out of jansson's "duplicate object key" message. */
static bool duplicate_key_error(const json_error_t *jerr, char *key, size_t key_size)
{
    if (!strstr(jerr->text, "duplicate object key"))
        return false;
    const char *q = strchr(jerr->text, '\'');
    const char *end = q ? strrchr(q + 1, '\'') : NULL;
    snprintf(key, key_size, "%.*s", end ? (int)(end - q - 1) : 0, end ? q + 1 : "");
    /* jansson quotes the key as it appeared, quotes included: "name" */
    size_t len = strlen(key);
    if (len >= 2 && key[0] == '"' && key[len - 1] == '"') {
        memmove(key, key + 1, len - 2);
        key[len - 2] = '\0';
    }
    return true;
}

int ck_schema_decode(const struct ck_schemas *set, const char *name, const char *body, size_t len,
                     enum ck_field_validation validation, json_t **ret_obj,
                     struct ck_warnings *warnings, struct ck_err *reterr)
{
    const json_t *schema = ck_schemas_get(set, name);
    if (!schema)
        return ck_err_set(reterr, CK_EINVAL, "no schema named %s", name);

    json_error_t jerr;
    json_t *obj = NULL;
    int loaded = ck_json_loadb(body, len, JSON_REJECT_DUPLICATES, &obj, &jerr);
    char key[128];
    if (loaded < 0 && loaded != CK_ENOMEM && duplicate_key_error(&jerr, key, sizeof(key))) {
        if (validation == CK_FIELD_VALIDATION_STRICT)
            return ck_err_set(reterr, CK_EINVAL, "strict decoding error: duplicate field \"%s\"",
                              key);
        if (validation == CK_FIELD_VALIDATION_WARN)
            ck_warnings_add(warnings, "duplicate field \"%s\"", key);
        loaded = ck_json_loadb(body, len, 0, &obj, &jerr); /* the last value wins, as in Go */
    }
    /* running out of memory is a 500, not the client's syntax */
    if (loaded == CK_ENOMEM)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (loaded < 0)
        return ck_err_set(reterr, CK_EINVAL, "json parse error: %s (line %d, column %d)", jerr.text,
                          jerr.line, jerr.column);

    return ck_schema_decode_tree(set, name, obj, validation, ret_obj, warnings, reterr);
}

int ck_schema_decode_tree(const struct ck_schemas *set, const char *name, json_t *obj,
                          enum ck_field_validation validation, json_t **ret_obj,
                          struct ck_warnings *warnings, struct ck_err *reterr)
{
    const json_t *schema = ck_schemas_get(set, name);
    if (!schema) {
        json_decref(obj);
        return ck_err_set(reterr, CK_EINVAL, "no schema named %s", name);
    }
    struct decode d = {.set = set, .validation = validation, .warnings = warnings};
    struct path p = {.len = 0};
    /* Enter through a $ref so the root's type name appears in messages. */
    char ref[512];
    snprintf(ref, sizeof(ref), REF_PREFIX "%s", name);
    json_t *root = json_pack("{s:s}", "$ref", ref);
    bool cr = json_is_true(json_object_get(schema, "x-ckube-custom-resource"));
    d.collect_unknown = cr;
    if (root)
        decode_value(&d, root, obj, short_name(name), &p, 0, cr);
    report_unknown(&d);
    json_decref(root);
    int r = 0;
    if (!root || d.nomem)
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    else if (d.type_error)
        r = ck_err_set(reterr, CK_EINVAL, "%s", d.type_error);
    else if (d.unknown)
        r = ck_err_set(reterr, CK_EINVAL, "strict decoding error: %s", d.unknown);
    free(d.type_error);
    free(d.unknown);
    if (r < 0) {
        json_decref(obj);
        return r;
    }
    *ret_obj = obj;
    return 0;
}

/* ---- defaulting --------------------------------------------------------- */

static json_t *zero_value(const struct ck_schemas *set, const json_t *schema_in)
{
    const json_t *schema = resolve(set, schema_in, NULL);
    /* a nullable zero is null, as Go marshals a zero metav1.Time; never "" */
    if (json_is_true(json_object_get(schema_in, "nullable")) ||
        json_is_true(json_object_get(schema, "nullable")))
        return json_null();
    const char *type = json_string_value(json_object_get(schema, "type"));
    if (json_is_true(json_object_get(schema, "x-kubernetes-int-or-string")))
        return json_integer(0);
    if (!type)
        return json_object_get(schema, "properties") ? json_object() : json_null();
    if (strcmp(type, "object") == 0)
        return json_object();
    if (strcmp(type, "array") == 0)
        return json_array();
    if (strcmp(type, "string") == 0)
        return json_string("");
    if (strcmp(type, "integer") == 0)
        return json_integer(0);
    if (strcmp(type, "number") == 0)
        return json_real(0);
    if (strcmp(type, "boolean") == 0)
        return json_false();
    return json_null();
}

/* A property's default: on the referencing schema (allOf wrapper) or the referenced one. */
static const json_t *default_of(const struct ck_schemas *set, const json_t *prop)
{
    const json_t *def = json_object_get(prop, "default");
    return def ? def : json_object_get(resolve(set, prop, NULL), "default");
}

/* Returns 0, or CK_ENOMEM when a default could not be set (obj is then partly defaulted). */
static int default_value(const struct ck_schemas *set, const json_t *schema_in, json_t *v,
                         int depth, bool cr)
{
    if (set && !ck__schema_reaches(set, schema_in, CK__REACHES_DEFAULTS))
        return 0; /* (most of an object has no default below it) */
    const char *ref_name = NULL;
    const json_t *schema = resolve(set, schema_in, &ref_name);
    if (cr && ref_name && depth > 0)
        cr = false;
    /* apiextensions defaults the specified fields below preserve-unknown-fields too */
    if (!schema || depth > MAX_DEPTH ||
        (!cr && json_is_true(json_object_get(schema, "x-kubernetes-preserve-unknown-fields"))))
        return 0;
    if (json_is_array(v)) {
        const json_t *items = json_object_get(schema, "items");
        size_t i;
        json_t *item;
        const json_t *item_default = cr && items ? default_of(set, items) : NULL;
        json_array_foreach(v, i, item)
        {
            /* a custom resource's null element takes the items' default */
            if (item_default && json_is_null(item) && !is_nullable(set, items)) {
                if (json_array_set_new(v, i, ck__json_copy(item_default)) < 0)
                    return CK_ENOMEM;
                item = json_array_get(v, i);
            }
            if (items && default_value(set, items, item, depth + 1, cr) < 0)
                return CK_ENOMEM;
        }
        return 0;
    }
    if (!json_is_object(v))
        return 0;
    const json_t *props = json_object_get(schema, "properties");
    const char *key;
    const json_t *prop;
    /* A named schema knows its defaulted properties: the rest are entered only if present. */
    const json_t *defaulted = !cr && ref_name ? defaulted_of(set, ref_name) : NULL;
    if (defaulted) {
        size_t i;
        json_t *name;
        json_array_foreach(defaulted, i, name)
        {
            key = json_string_value(name);
            if (!json_object_get(v, key) &&
                json_object_set_new(
                    v, key, ck__json_copy(default_of(set, json_object_get(props, key)))) < 0)
                return CK_ENOMEM;
        }
        json_t *child;
        json_object_foreach(v, key, child)
        {
            prop = json_object_get(props, key);
            if (prop && default_value(set, prop, child, depth + 1, cr) < 0)
                return CK_ENOMEM;
        }
    }
    json_object_foreach((json_t *)(defaulted ? NULL : props), key, prop)
    {
        json_t *child = json_object_get(v, key);
        /* a custom resource's null takes the default unless the field is nullable */
        if (!child || (cr && json_is_null(child) && !is_nullable(set, prop))) {
            const json_t *def = default_of(set, prop);
            /* json_object_set_new frees the value it could not insert */
            if (def && json_object_set_new(v, key, ck__json_copy(def)) < 0)
                return CK_ENOMEM;
            child = json_object_get(v, key);
        }
        if (child && default_value(set, prop, child, depth + 1, cr) < 0)
            return CK_ENOMEM;
    }
    size_t i;
    json_t *emit;
    json_array_foreach(json_object_get(schema, "x-ckube-always-emit"), i, emit)
    {
        const char *field = json_string_value(emit);
        const json_t *prop_schema = json_object_get(props, field ? field : "");
        if (prop_schema && !json_object_get(v, field)) {
            /* an emitted object gets its own defaults and always-emit fields, so
             * defaulting the result again changes nothing */
            if (json_object_set_new(v, field, zero_value(set, prop_schema)) < 0 ||
                default_value(set, prop_schema, json_object_get(v, field), depth + 1, cr) < 0)
                return CK_ENOMEM;
        }
    }
    const json_t *extra = json_object_get(schema, "additionalProperties");
    if (json_is_object(extra)) {
        const json_t *value_default = cr ? default_of(set, extra) : NULL;
        json_t *value;
        json_object_foreach(v, key, value)
        {
            if (cr && json_object_get(props, key))
                continue; /* a property, not a map entry */
            if (value_default && json_is_null(value) && !is_nullable(set, extra)) {
                if (json_object_set_new(v, key, ck__json_copy(value_default)) < 0)
                    return CK_ENOMEM;
                value = json_object_get(v, key);
            }
            if (default_value(set, extra, value, depth + 1, cr) < 0)
                return CK_ENOMEM;
        }
    }
    return 0;
}

int ck_schema_default(const struct ck_schemas *set, const char *name, json_t *obj)
{
    const json_t *schema = ck_schemas_get(set, name);
    bool cr = json_is_true(json_object_get(schema, "x-ckube-custom-resource"));
    return schema ? default_value(set, schema, obj, 0, cr) : 0;
}

/* ---- validation --------------------------------------------------------- */

/*
 * "supported values: ..." for an enum; caller frees; NULL when out of memory.
 * quote_all: every value quoted as a Go string, as apiextensions prints a
 * custom resource's enum (a number 1 is "1", an object its JSON, quoted).
 */
static char *render_enum(const json_t *values, bool quote_all)
{
    struct ck__buf b = {0};
    ck__buf_adds(&b, "supported values: ");
    size_t i;
    json_t *value;
    json_array_foreach(values, i, value)
    {
        char *piece = json_is_string(value) && quote_all
                          ? ck__quote_dup(json_string_value(value))
                          : ck__json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT, NULL);
        if (piece && quote_all && !json_is_string(value)) {
            char *quoted = ck__quote_dup(piece);
            free(piece);
            piece = quoted;
        }
        if (!piece)
            return ck__buf_release(&b), NULL;
        ck__buf_printf(&b, "%s%s", i ? ", " : "", piece);
        free(piece);
    }
    return ck__buf_take(&b);
}

/*
 * Validation passes: a built-in kind's value is validated once, as Go; a
 * custom resource's in three walks, in the order apiextensions reports
 * their errors: the OpenAPI schema, then embedded resources, then list
 * types.
 */
enum validate_pass { PASS_GO, PASS_OPENAPI, PASS_EMBEDDED, PASS_LIST_TYPES };

static void validate_value(const struct ck_schemas *set, const json_t *schema_in, const json_t *v,
                           const json_t *old, struct path *p, struct ck_field_errors *errs,
                           int depth, enum validate_pass pass);

/* ---- validation of custom resources (kube-openapi's wording) ----------- */

/* The JSON type of a value as kube-openapi names it. */
static const char *openapi_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "integer";
    case JSON_REAL:
        return "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    default:
        return "null";
    }
}

/* A float64 as Go's %v prints it: the shortest digits that read back the same. */
static void go_float(double x, char *buf, size_t size)
{
    if (x != x || x - x != 0) {
        snprintf(buf, size, x != x ? "NaN" : (x > 0 ? "+Inf" : "-Inf"));
        return;
    }
    int prec = 1;
    char tmp[64];
    for (; prec < 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, x);
        if (strtod(tmp, NULL) == x)
            break;
    }
    snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, x);
    int exp = atoi(strchr(tmp, 'e') + 1);
    if (exp < -4 || exp >= 21) {
        /* Go drops the mantissa's trailing zeros and keeps a two-digit exponent */
        snprintf(buf, size, "%s", tmp);
        return;
    }
    int decimals = prec - 1 - exp;
    snprintf(buf, size, "%.*f", decimals > 0 ? decimals : 0, x);
}

/* A number value (integer or float) as Go prints it. */
static void go_number(const json_t *v, char *buf, size_t size)
{
    if (json_is_integer(v))
        snprintf(buf, size, "%lld", (long long)json_integer_value(v));
    else
        go_float(json_number_value(v), buf, size);
}

/* A bound of the schema as kube-openapi prints it against value v. */
static void go_bound(const json_t *bound, const json_t *v, char *buf, size_t size)
{
    double b = json_number_value(bound);
    if (json_is_integer(v) && b == (double)(long long)b)
        snprintf(buf, size, "%lld", (long long)b);
    else
        go_float(b, buf, size);
}

static void type_invalid(struct ck_field_errors *errs, const struct path *p, const char *expected,
                         const char *actual)
{
    ck_field_errors_add(errs, CK_FIELD_TYPE_INVALID, p->buf, actual, true,
                        "%s in body must be of type %s: \"%s\"", p->buf, expected, actual);
}

/* The number of UTF-8 characters (runes) of s. */
static size_t rune_count(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static bool type_matches(const char *type, const json_t *v)
{
    bool integral = json_is_real(v) && json_real_value(v) == (double)(long long)json_real_value(v);
    if (strcmp(type, "integer") == 0)
        return json_is_integer(v) || integral;
    if (strcmp(type, "number") == 0)
        return json_is_number(v);
    if (strcmp(type, "string") == 0)
        return json_is_string(v);
    if (strcmp(type, "boolean") == 0)
        return json_is_boolean(v);
    if (strcmp(type, "array") == 0)
        return json_is_array(v);
    if (strcmp(type, "object") == 0)
        return json_is_object(v);
    return true; /* an unknown type name: the CRD's validation refuses it */
}

static void validate_enum(const json_t *schema, const json_t *v, const struct path *p,
                          struct ck_field_errors *errs, bool quote_all);

/* Validates v against the alternatives of anyOf or oneOf; the number that hold. */
static size_t count_valid(const struct ck_schemas *set, const json_t *alternatives, const json_t *v,
                          struct path *p, int depth, struct ck_field_errors *best)
{
    size_t valid = 0;
    size_t i;
    json_t *alternative;
    json_array_foreach(alternatives, i, alternative)
    {
        struct ck_field_errors one = {0};
        validate_value(set, alternative, v, NULL, p, &one, depth + 1, PASS_OPENAPI);
        if (one.nomem)
            best->nomem = true;
        if (one.len == 0) {
            valid++;
        } else if (valid == 0 && (best->len == 0 || one.len < best->len)) {
            /* the failing alternative with the fewest errors explains it best */
            ck_field_errors_release(best);
            *best = one;
            continue;
        }
        ck_field_errors_release(&one);
    }
    return valid;
}

static void merge_errors(struct ck_field_errors *into, struct ck_field_errors *from)
{
    for (size_t i = 0; i < from->len; i++) {
        struct ck_field_error *e = &from->items[i];
        ck_field_errors_add(into, e->type, e->field, e->value, false, e->detail ? "%s" : NULL,
                            e->detail);
    }
    if (from->nomem)
        into->nomem = true;
    ck_field_errors_release(from);
}

/* allOf, anyOf, oneOf and not, with kube-openapi's composite messages. */
static void validate_junctors(const struct ck_schemas *set, const json_t *schema, const json_t *v,
                              struct path *p, struct ck_field_errors *errs, int depth)
{
    const json_t *any_of = json_object_get(schema, "anyOf");
    if (json_array_size(any_of) > 0) {
        struct ck_field_errors best = {0};
        if (count_valid(set, any_of, v, p, depth, &best) == 0) {
            ck_field_errors_add(errs, CK_FIELD_INVALID, "<nil>", "", true,
                                "\"%s\" must validate at least one schema (anyOf)", p->buf);
            merge_errors(errs, &best);
        }
        ck_field_errors_release(&best);
    }
    const json_t *one_of = json_object_get(schema, "oneOf");
    if (json_array_size(one_of) > 0) {
        struct ck_field_errors best = {0};
        size_t valid = count_valid(set, one_of, v, p, depth, &best);
        if (valid != 1) {
            char more[64];
            if (valid == 0)
                snprintf(more, sizeof(more), "Found none valid");
            else
                snprintf(more, sizeof(more), "Found %zu valid alternatives", valid);
            ck_field_errors_add(errs, CK_FIELD_INVALID, "<nil>", "", true,
                                "\"%s\" must validate one and only one schema (oneOf). %s", p->buf,
                                more);
            if (valid == 0)
                merge_errors(errs, &best);
        }
        ck_field_errors_release(&best);
    }
    const json_t *all_of = json_object_get(schema, "allOf");
    if (json_array_size(all_of) > 0 && !ref_of(schema)) {
        size_t valid = 0, i;
        json_t *part;
        json_array_foreach(all_of, i, part)
        {
            size_t before = errs->len;
            validate_value(set, part, v, NULL, p, errs, depth + 1, PASS_OPENAPI);
            valid += errs->len == before;
        }
        if (valid != json_array_size(all_of))
            ck_field_errors_add(errs, CK_FIELD_INVALID, "<nil>", "", true,
                                "\"%s\" must validate all the schemas (allOf)%s", p->buf,
                                valid == 0 ? ". None validated" : "");
    }
    const json_t *not = json_object_get(schema, "not");
    if (json_is_object(not )) {
        struct ck_field_errors one = {0};
        validate_value(set, not, v, NULL, p, &one, depth + 1, PASS_OPENAPI);
        if (one.len == 0 && !one.nomem)
            ck_field_errors_add(errs, CK_FIELD_INVALID, "<nil>", "", true,
                                "\"%s\" must not validate the schema (not)", p->buf);
        ck_field_errors_release(&one);
    }
}

static void validate_string(const json_t *schema, const json_t *v, const struct path *p,
                            struct ck_field_errors *errs)
{
    const char *s = json_string_value(v);
    const json_t *min = json_object_get(schema, "minLength");
    const json_t *max = json_object_get(schema, "maxLength");
    size_t runes = rune_count(s);
    if (json_is_integer(max) && (json_int_t)runes > json_integer_value(max))
        ck_field_errors_add(errs, CK_FIELD_TOO_LONG, p->buf, NULL, false,
                            "may not be more than %lld bytes", (long long)json_integer_value(max));
    if (json_is_integer(min) && (json_int_t)runes < json_integer_value(min))
        ck_field_errors_add(errs, CK_FIELD_INVALID, p->buf, s, true,
                            "%s in body should be at least %lld chars long", p->buf,
                            (long long)json_integer_value(min));
    const char *pattern = json_string_value(json_object_get(schema, "pattern"));
    if (pattern) {
        char *why = NULL;
        int m = ck__pattern_match(pattern, s, &why, &errs->nomem);
        if (m == 0)
            ck_field_errors_add(errs, CK_FIELD_INVALID, p->buf, s, true,
                                "%s in body should match '%s'", p->buf, pattern);
        else if (m == CK__PATTERN_INVALID)
            ck_field_errors_add(errs, CK_FIELD_INVALID, p->buf, s, true,
                                "%s in body should match '%s, but pattern is invalid: %s'", p->buf,
                                pattern, why ? why : "");
        free(why);
    }
    const char *format = json_string_value(json_object_get(schema, "format"));
    if (format && !ck__format_valid(format, s))
        ck_field_errors_add(errs, CK_FIELD_TYPE_INVALID, p->buf, s, true,
                            "%s in body must be of type %s: \"%s\"", p->buf, format, s);
}

static void validate_number(const json_t *schema, const json_t *v, const struct path *p,
                            struct ck_field_errors *errs)
{
    double x = json_number_value(v);
    char value[64], bound[64];
    go_number(v, value, sizeof(value));
    const json_t *multiple = json_object_get(schema, "multipleOf");
    if (json_is_number(multiple) && json_number_value(multiple) > 0) {
        double factor = json_number_value(multiple);
        double q = x / factor;
        if (q != (double)(long long)q) {
            go_bound(multiple, v, bound, sizeof(bound));
            ck_field_errors_add(errs, CK_FIELD_INVALID, p->buf, value, false,
                                "%s in body should be a multiple of %s", p->buf, bound);
        }
    }
    const json_t *max = json_object_get(schema, "maximum");
    if (json_is_number(max)) {
        bool exclusive = json_is_true(json_object_get(schema, "exclusiveMaximum"));
        double m = json_number_value(max);
        if (exclusive ? x >= m : x > m) {
            go_bound(max, v, bound, sizeof(bound));
            ck_field_errors_add(errs, CK_FIELD_INVALID, p->buf, value, false,
                                "%s in body should be less than %s%s", p->buf,
                                exclusive ? "" : "or equal to ", bound);
        }
    }
    const json_t *min = json_object_get(schema, "minimum");
    if (json_is_number(min)) {
        bool exclusive = json_is_true(json_object_get(schema, "exclusiveMinimum"));
        double m = json_number_value(min);
        if (exclusive ? x <= m : x < m) {
            go_bound(min, v, bound, sizeof(bound));
            ck_field_errors_add(errs, CK_FIELD_INVALID, p->buf, value, false,
                                "%s in body should be greater than %s%s", p->buf,
                                exclusive ? "" : "or equal to ", bound);
        }
    }
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A value as Go's %#v prints an interface{} holding it (Duplicate values). */
static void go_sharp_value(struct ck__buf *b, const json_t *v)
{
    char num[64];
    if (json_is_string(v)) {
        char *q = ck__quote_dup(json_string_value(v));
        ck__buf_adds(b, q ? q : "\"\"");
        free(q);
    } else if (json_is_number(v)) {
        go_number(v, num, sizeof(num));
        ck__buf_adds(b, num);
    } else if (json_is_boolean(v)) {
        ck__buf_adds(b, json_is_true(v) ? "true" : "false");
    } else if (json_is_array(v)) {
        ck__buf_adds(b, "[]interface {}{");
        size_t i;
        json_t *item;
        json_array_foreach((json_t *)v, i, item)
        {
            if (i)
                ck__buf_adds(b, ", ");
            go_sharp_value(b, item);
        }
        ck__buf_adds(b, "}");
    } else if (json_is_object(v)) {
        /* Go prints a map's keys sorted */
        size_t n = json_object_size(v), k = 0;
        const char **keys = calloc(n ? n : 1, sizeof(*keys));
        const char *key;
        json_t *value;
        if (keys) {
            json_object_foreach((json_t *)v, key, value)
            {
                keys[k++] = key;
            }
            qsort(keys, n, sizeof(*keys), compare_names);
        }
        ck__buf_adds(b, "map[string]interface {}{");
        for (size_t i = 0; keys && i < n; i++) {
            char *q = ck__quote_dup(keys[i]);
            ck__buf_printf(b, "%s%s:", i ? ", " : "", q ? q : "\"\"");
            free(q);
            go_sharp_value(b, json_object_get(v, keys[i]));
        }
        ck__buf_adds(b, "}");
        free(keys);
    } else {
        ck__buf_adds(b, "interface {}(nil)");
    }
}

/* One element of a set or list-map, as its identity (compact, sorted JSON) and index. */
struct list_identity {
    char *text;
    size_t index;
};

static int compare_identities(const void *a, const void *b)
{
    const struct list_identity *x = a, *y = b;
    int r = strcmp(x->text, y->text);
    return r ? r : (x->index > y->index) - (x->index < y->index);
}

static int compare_sizes(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/*
 * The identity of element item: for a set the element itself; for a map
 * the object of its key fields (of the one key field alone when there is
 * one; "" when that one is absent). *ret_key receives that key object
 * (owned), for the error's value.
 */
static char *list_identity(const json_t *item, const json_t *keys, bool is_map, json_t **ret_key)
{
    *ret_key = NULL;
    if (!is_map)
        return ck__json_dumps(item, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS, NULL);
    json_t *key = json_object();
    if (!key)
        return NULL;
    size_t k;
    json_t *name;
    json_array_foreach(keys, k, name)
    {
        const json_t *value = json_string_value(name) && json_is_object(item)
                                  ? json_object_get(item, json_string_value(name))
                                  : NULL;
        if (value && json_object_set(key, json_string_value(name), (json_t *)value) < 0) {
            json_decref(key);
            return NULL;
        }
    }
    char *text = ck__json_dumps(key, JSON_COMPACT | JSON_SORT_KEYS, NULL);
    *ret_key = key;
    return text;
}

/* Whether two elements of v are equal (uniqueItems), by sorting their identities. */
static bool has_duplicates(const json_t *v, bool *nomem)
{
    size_t n = json_array_size(v);
    if (n < 2)
        return false;
    struct list_identity *ids = calloc(n, sizeof(*ids));
    bool dup = false;
    if (!ids) {
        *nomem = true;
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *unused;
        ids[i].index = i;
        ids[i].text = list_identity(json_array_get(v, i), NULL, false, &unused);
        if (!ids[i].text)
            *nomem = true;
    }
    if (!*nomem) {
        qsort(ids, n, sizeof(*ids), compare_identities);
        for (size_t i = 1; i < n && !dup; i++)
            dup = strcmp(ids[i].text, ids[i - 1].text) == 0;
    }
    for (size_t i = 0; i < n; i++)
        free(ids[i].text);
    free(ids);
    return dup;
}

/*
 * x-kubernetes-list-type set and map: the second appearance of an element
 * (of a map element's keys) is a Duplicate, once per value, in index order.
 * Sorting the identities keeps this O(n log n) on long lists.
 */
static void validate_list_type(const json_t *schema, const json_t *v, struct path *p,
                               struct ck_field_errors *errs)
{
    const char *list_type = json_string_value(json_object_get(schema, "x-kubernetes-list-type"));
    if (!list_type || (strcmp(list_type, "set") != 0 && strcmp(list_type, "map") != 0))
        return;
    bool is_map = strcmp(list_type, "map") == 0;
    const json_t *keys = json_object_get(schema, "x-kubernetes-list-map-keys");
    size_t n = json_array_size(v);
    if (is_map) {
        for (size_t i = 0; i < n; i++) {
            const json_t *item = json_array_get(v, i);
            if (!json_is_null(item) && !json_is_object(item)) {
                size_t saved = path_push_index(p, i);
                struct ck__buf b = {0};
                go_sharp_value(&b, item);
                char *text = ck__buf_take(&b);
                ck_field_errors_add(errs, CK_FIELD_INVALID, p->buf,
                                    json_is_string(item) ? json_string_value(item) : text,
                                    json_is_string(item),
                                    "must be an object for an array of list-type map");
                free(text);
                path_pop(p, saved);
                return;
            }
        }
    }
    if (n <= 1)
        return;
    struct list_identity *ids = calloc(n, sizeof(*ids));
    json_t **key_objects = calloc(n, sizeof(*key_objects));
    size_t *repeats = calloc(n, sizeof(*repeats));
    size_t n_repeats = 0;
    if (!ids || !key_objects || !repeats)
        goto nomem;
    for (size_t i = 0; i < n; i++) {
        ids[i].index = i;
        ids[i].text = list_identity(json_array_get(v, i), keys, is_map, &key_objects[i]);
        if (!ids[i].text)
            goto nomem;
    }
    qsort(ids, n, sizeof(*ids), compare_identities);
    for (size_t i = 1; i < n; i++)
        if (strcmp(ids[i].text, ids[i - 1].text) == 0 &&
            (i == 1 || strcmp(ids[i - 1].text, ids[i - 2].text) != 0))
            repeats[n_repeats++] = ids[i].index; /* the second of its kind */
    qsort(repeats, n_repeats, sizeof(*repeats), compare_sizes);
    for (size_t r = 0; r < n_repeats; r++) {
        size_t i = repeats[r];
        const json_t *item = json_array_get(v, i);
        size_t saved = path_push_index(p, i);
        if (!is_map && json_is_string(item)) {
            ck_field_errors_add(errs, CK_FIELD_DUPLICATE, p->buf, json_string_value(item), true,
                                NULL);
        } else {
            struct ck__buf b = {0};
            /* a list-map's one key shows as {"name":"a"}, several keys as the object of them */
            go_sharp_value(&b, is_map ? key_objects[i] : item);
            char *text = ck__buf_take(&b);
            if (!text)
                errs->nomem = true;
            ck_field_errors_add(errs, CK_FIELD_DUPLICATE, p->buf, text ? text : "", false, NULL);
            free(text);
        }
        path_pop(p, saved);
    }
    goto done;
nomem:
    errs->nomem = true;
done:
    for (size_t i = 0; ids && i < n; i++)
        free(ids[i].text);
    for (size_t i = 0; key_objects && i < n; i++)
        json_decref(key_objects[i]);
    free(ids);
    free(key_objects);
    free(repeats);
}

bool ck__dns1035_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || !(s[0] >= 'a' && s[0] <= 'z') || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

/*
 * An embedded resource must say its apiVersion (a group/version) and kind
 * (mixed-case DNS-1035 label), as strings.
 */
static void validate_embedded(const json_t *v, struct path *p, struct ck_field_errors *errs)
{
    static const char *const fields[] = {"apiVersion", "kind"};
    for (size_t i = 0; i < 2; i++) {
        const json_t *value = json_object_get(v, fields[i]);
        size_t saved = path_push_field(p, fields[i]);
        const char *text = json_string_value(value);
        if (!value) {
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, p->buf, NULL, false, "must not be empty");
        } else if (!text) {
            char *dump = ck__json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT, NULL);
            ck_field_errors_add(errs, CK_FIELD_INVALID, p->buf, dump ? dump : "", false,
                                "must be a string");
            free(dump);
        } else if (!*text) {
            ck_field_errors_add(errs, CK_FIELD_INVALID, p->buf, "", true, "must not be empty");
        } else if (i == 0) {
            const char *slash = strchr(text, '/');
            if (slash && strchr(slash + 1, '/') && strcmp(text, "/") != 0)
                ck_field_errors_add(errs, CK_FIELD_INVALID, p->buf, text, true,
                                    "unexpected GroupVersion string: %s", text);
        } else {
            char lower[128];
            size_t n = strlen(text);
            bool long_kind = n >= sizeof(lower);
            for (size_t c = 0; c < n && !long_kind; c++)
                lower[c] = (char)((text[c] >= 'A' && text[c] <= 'Z') ? text[c] + 32 : text[c]);
            lower[long_kind ? 0 : n] = '\0';
            if (long_kind || n > 63)
                ck_field_errors_add(errs, CK_FIELD_INVALID, p->buf, text, true,
                                    "may have mixed case, but should otherwise match: must be no "
                                    "more than 63 characters");
            else if (!ck__dns1035_label(lower))
                ck_field_errors_add(
                    errs, CK_FIELD_INVALID, p->buf, text, true,
                    "may have mixed case, but should otherwise match: a DNS-1035 label must "
                    "consist of lower case alphanumeric characters or '-', start with an "
                    "alphabetic character, and end with an alphanumeric character (e.g. "
                    "'my-name',  or 'abc-123', regex used for validation is "
                    "'[a-z]([-a-z0-9]*[a-z0-9])?')");
        }
        path_pop(p, saved);
    }
}

/* The walks of the embedded-resource and list-type passes, by the structure. */
static void validate_structure(const struct ck_schemas *set, const json_t *schema, const json_t *v,
                               struct path *p, struct ck_field_errors *errs, int depth,
                               enum validate_pass pass)
{
    if (json_is_array(v)) {
        if (pass == PASS_LIST_TYPES)
            validate_list_type(schema, v, p, errs);
        const json_t *items = json_object_get(schema, "items");
        size_t i;
        json_t *item;
        json_array_foreach((json_t *)v, i, item)
        {
            size_t saved = path_push_index(p, i);
            if (json_is_object(items))
                validate_value(set, items, item, NULL, p, errs, depth + 1, pass);
            path_pop(p, saved);
        }
        return;
    }
    if (!json_is_object(v))
        return;
    if (pass == PASS_EMBEDDED &&
        json_is_true(json_object_get(schema, "x-kubernetes-embedded-resource")))
        validate_embedded(v, p, errs);
    const json_t *props = json_object_get(schema, "properties");
    const json_t *extra = json_object_get(schema, "additionalProperties");
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)v, key, value)
    {
        const json_t *child = json_object_get(props, key);
        const json_t *value_schema = child ? child : (json_is_object(extra) ? extra : NULL);
        if (!value_schema)
            continue;
        /* these walks name a map entry spec.labels[key], as field.Path's Key() does */
        size_t saved = child ? path_push_field(p, key) : path_push_key(p, key);
        validate_value(set, value_schema, value, NULL, p, errs, depth + 1, pass);
        path_pop(p, saved);
    }
}

const json_t *ck__list_map_element(const json_t *schema, const json_t *old, const json_t *item)
{
    const char *list_type = json_string_value(json_object_get(schema, "x-kubernetes-list-type"));
    const json_t *keys = json_object_get(schema, "x-kubernetes-list-map-keys");
    if (!json_is_array(old) || !json_is_object(item) || !list_type ||
        strcmp(list_type, "map") != 0 || json_array_size(keys) == 0)
        return NULL;
    size_t i;
    json_t *candidate;
    json_array_foreach((json_t *)old, i, candidate)
    {
        bool same = json_is_object(candidate);
        size_t k;
        json_t *key;
        json_array_foreach(keys, k, key)
        {
            const char *name = json_string_value(key);
            const json_t *a = name ? json_object_get(item, name) : NULL;
            const json_t *b = name ? json_object_get(candidate, name) : NULL;
            same = same && ((!a && !b) || (a && b && json_equal((json_t *)a, (json_t *)b)));
        }
        if (same)
            return candidate;
    }
    return NULL;
}

/* Each field that schema's required names is in the object v. */
static void check_required(const json_t *schema, const json_t *v, struct path *p,
                           struct ck_field_errors *errs)
{
    size_t i;
    json_t *required;
    json_array_foreach(json_object_get(schema, "required"), i, required)
    {
        const char *field = json_string_value(required);
        if (field && !json_object_get(v, field)) {
            size_t saved = path_push_field(p, field);
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, p->buf, NULL, false, NULL);
            path_pop(p, saved);
        }
    }
}

static void validate_custom(const struct ck_schemas *set, const json_t *schema, const json_t *v,
                            const json_t *old, struct path *p, struct ck_field_errors *errs,
                            int depth, enum validate_pass pass)
{
    if (pass != PASS_OPENAPI) {
        validate_structure(set, schema, v, p, errs, depth, pass);
        return;
    }
    /* ratcheting: a value equal to the one it replaces keeps whatever errors it had */
    if (old && json_equal((json_t *)v, (json_t *)old))
        return;
    const char *type = json_string_value(json_object_get(schema, "type"));
    bool int_or_string = json_is_true(json_object_get(schema, "x-kubernetes-int-or-string"));
    bool nullable = json_is_true(json_object_get(schema, "nullable"));
    const char *expected = int_or_string ? "integer,string" : type;
    if (json_is_null(v)) {
        if (expected && !nullable)
            type_invalid(errs, p, expected, "null");
        validate_enum(schema, v, p, errs, true);
        return;
    }
    bool ok = !expected || (int_or_string ? (json_is_string(v) || type_matches("integer", v))
                                          : type_matches(type, v));
    if (!ok) {
        type_invalid(errs, p, expected, openapi_kind(v));
        validate_enum(schema, v, p, errs, true);
        return;
    }
    validate_junctors(set, schema, v, p, errs, depth);
    if (json_is_string(v))
        validate_string(schema, v, p, errs);
    if (json_is_number(v))
        validate_number(schema, v, p, errs);
    validate_enum(schema, v, p, errs, true);
    if (json_is_array(v)) {
        size_t n = json_array_size(v);
        const json_t *min = json_object_get(schema, "minItems");
        const json_t *max = json_object_get(schema, "maxItems");
        char count[32];
        snprintf(count, sizeof(count), "%zu", n);
        if (json_is_integer(min) && (json_int_t)n < json_integer_value(min))
            ck_field_errors_add(errs, CK_FIELD_INVALID, p->buf, count, false,
                                "%s in body should have at least %lld items", p->buf,
                                (long long)json_integer_value(min));
        if (json_is_integer(max) && (json_int_t)n > json_integer_value(max))
            ck_field_errors_add(errs, CK_FIELD_TOO_MANY, p->buf, count, false,
                                "must have at most %lld items", (long long)json_integer_value(max));
        if (json_is_true(json_object_get(schema, "uniqueItems"))) {
            bool dup = has_duplicates(v, &errs->nomem);
            if (dup)
                ck_field_errors_add(errs, CK_FIELD_INVALID, p->buf, "", true,
                                    "%s in body shouldn't contain duplicates", p->buf);
        }
        const json_t *items = json_object_get(schema, "items");
        size_t i;
        json_t *item;
        json_array_foreach((json_t *)v, i, item)
        {
            size_t saved = path_push_index(p, i);
            if (json_is_object(items))
                validate_value(set, items, item, ck__list_map_element(schema, old, item), p, errs,
                               depth + 1, pass);
            path_pop(p, saved);
        }
        return;
    }
    if (!json_is_object(v))
        return;
    size_t n = json_object_size(v);
    const json_t *min = json_object_get(schema, "minProperties");
    const json_t *max = json_object_get(schema, "maxProperties");
    char count[32];
    snprintf(count, sizeof(count), "%zu", n);
    if (json_is_integer(max) && (json_int_t)n > json_integer_value(max))
        ck_field_errors_add(errs, CK_FIELD_TOO_MANY, p->buf, count, false,
                            "must have at most %lld items", (long long)json_integer_value(max));
    if (json_is_integer(min) && (json_int_t)n < json_integer_value(min))
        ck_field_errors_add(errs, CK_FIELD_INVALID, p->buf, count, false,
                            "%s in body should have at least %lld properties", p->buf,
                            (long long)json_integer_value(min));
    check_required(schema, v, p, errs);
    const json_t *props = json_object_get(schema, "properties");
    const json_t *extra = json_object_get(schema, "additionalProperties");
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)v, key, value)
    {
        const json_t *child = json_object_get(props, key);
        const json_t *value_schema = child ? child : (json_is_object(extra) ? extra : NULL);
        if (!value_schema)
            continue;
        /* the root's apiVersion and kind are never ratcheted */
        bool type_meta = depth == 0 && (strcmp(key, "apiVersion") == 0 || strcmp(key, "kind") == 0);
        const json_t *old_value =
            json_is_object(old) && !type_meta ? json_object_get(old, key) : NULL;
        size_t saved = path_push_field(p, key);
        validate_value(set, value_schema, value, old_value, p, errs, depth + 1, pass);
        path_pop(p, saved);
    }
}

static void validate_go(const struct ck_schemas *set, const json_t *schema, const json_t *v,
                        struct path *p, struct ck_field_errors *errs, int depth);

static void validate_value(const struct ck_schemas *set, const json_t *schema_in, const json_t *v,
                           const json_t *old, struct path *p, struct ck_field_errors *errs,
                           int depth, enum validate_pass pass)
{
    const char *ref_name = NULL;
    const json_t *schema = resolve(set, schema_in, &ref_name);
    if (!schema || depth > MAX_DEPTH)
        return;
    if (pass != PASS_GO && ref_name && depth > 0) {
        /* a referenced built-in type (ObjectMeta) is validated as Go validates it, once */
        if (pass != PASS_OPENAPI)
            return;
        pass = PASS_GO;
    }
    if (pass != PASS_GO) {
        validate_custom(set, schema, v, old, p, errs, depth, pass);
        return;
    }
    if (json_is_true(json_object_get(schema, "x-kubernetes-preserve-unknown-fields")))
        return;
    validate_enum(schema, v, p, errs, false);
    validate_go(set, schema, v, p, errs, depth);
}

static void validate_enum(const json_t *schema, const json_t *v, const struct path *p,
                          struct ck_field_errors *errs, bool quote_all)
{
    const json_t *allowed = json_object_get(schema, "enum");
    if (json_is_array(allowed)) {
        bool found = false;
        size_t i;
        json_t *candidate;
        json_array_foreach(allowed, i, candidate)
        {
            found = found || json_equal(candidate, (json_t *)v);
        }
        if (!found) {
            char *supported = render_enum(allowed, quote_all);
            char *value = ck__json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT, NULL);
            if (!supported || !value)
                errs->nomem = true;
            ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, p->buf,
                                json_is_string(v) ? json_string_value(v) : value, json_is_string(v),
                                "%s", supported ? supported : "");
            free(value);
            free(supported);
        }
    }
}

/* Validation of a built-in kind's value: what its Go type's validation checks. */
static void validate_go(const struct ck_schemas *set, const json_t *schema, const json_t *v,
                        struct path *p, struct ck_field_errors *errs, int depth)
{
    if (json_is_integer(v)) {
        json_int_t n = json_integer_value(v);
        const json_t *min = json_object_get(schema, "minimum");
        const json_t *max = json_object_get(schema, "maximum");
        char value[32];
        snprintf(value, sizeof(value), "%lld", (long long)n);
        if (json_is_number(min) && (double)n < json_number_value(min))
            ck_field_errors_add(errs, CK_FIELD_INVALID, p->buf, value, false,
                                "must be greater than or equal to %g", json_number_value(min));
        if (json_is_number(max) && (double)n > json_number_value(max))
            ck_field_errors_add(errs, CK_FIELD_INVALID, p->buf, value, false,
                                "must be less than or equal to %g", json_number_value(max));
    }

    if (json_is_array(v)) {
        const json_t *items = json_object_get(schema, "items");
        size_t i;
        json_t *item;
        json_array_foreach(v, i, item)
        {
            size_t saved = path_push_index(p, i);
            if (items)
                validate_value(set, items, item, NULL, p, errs, depth + 1, PASS_GO);
            path_pop(p, saved);
        }
        return;
    }
    if (!json_is_object(v))
        return;
    check_required(schema, v, p, errs);
    const json_t *props = json_object_get(schema, "properties");
    const json_t *extra = json_object_get(schema, "additionalProperties");
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)v, key, value)
    {
        const json_t *child = json_object_get(props, key);
        if (child) {
            size_t saved = path_push_field(p, key);
            validate_value(set, child, value, NULL, p, errs, depth + 1, PASS_GO);
            path_pop(p, saved);
        } else if (json_is_object(extra)) {
            size_t saved = path_push_key(p, key);
            validate_value(set, extra, value, NULL, p, errs, depth + 1, PASS_GO);
            path_pop(p, saved);
        }
    }
}

void ck_schema_validate(const struct ck_schemas *set, const char *name, const json_t *obj,
                        struct ck_field_errors *errs)
{
    ck_schema_validate_update(set, name, obj, NULL, errs);
}

void ck_schema_validate_update(const struct ck_schemas *set, const char *name, const json_t *obj,
                               const json_t *old, struct ck_field_errors *errs)
{
    const json_t *schema = ck_schemas_get(set, name);
    struct path p = {.len = 0};
    if (!schema)
        return;
    if (!json_is_true(json_object_get(schema, "x-ckube-custom-resource"))) {
        validate_value(set, schema, obj, NULL, &p, errs, 0, PASS_GO);
        return;
    }
    for (enum validate_pass pass = PASS_OPENAPI; pass <= PASS_LIST_TYPES; pass++)
        validate_value(set, schema, obj, pass == PASS_OPENAPI ? old : NULL, &p, errs, 0, pass);
}

/* ---- lone custom resource schemas (structural.c) ------------------------ */

void ck__custom_validate(const json_t *schema, const json_t *value, const char *field,
                         struct ck_field_errors *errs)
{
    struct ck_field_errors found = {0};
    struct path p = {.len = 0};
    /* as apiextensions validates a default: embedded resources, then (only when they are
     * right) the OpenAPI schema; list types are not checked */
    validate_value(NULL, schema, value, NULL, &p, &found, 1, PASS_EMBEDDED);
    if (found.len == 0)
        validate_value(NULL, schema, value, NULL, &p, &found, 1, PASS_OPENAPI);
    for (size_t i = 0; i < found.len; i++) {
        struct ck_field_error *e = &found.items[i];
        struct ck__buf b = {0};
        ck__buf_printf(&b, "%s%s%s", field, e->field[0] && strcmp(e->field, "<nil>") ? "." : "",
                       strcmp(e->field, "<nil>") ? e->field : "");
        char *where = ck__buf_take(&b);
        if (!where)
            errs->nomem = true;
        ck_field_errors_add(errs, e->type, where ? where : field, e->value, false,
                            e->detail ? "%s" : NULL, e->detail);
        free(where);
    }
    if (found.nomem)
        errs->nomem = true;
    ck_field_errors_release(&found);
}

int ck__custom_is_pruned(const json_t *schema, const json_t *value)
{
    json_t *copy = ck__json_copy(value);
    if (!copy)
        return CK_ENOMEM;
    struct decode d = {.set = NULL, .validation = CK_FIELD_VALIDATION_IGNORE};
    struct path p = {.len = 0};
    decode_value(&d, schema, copy, "", &p, 1, true);
    int same = !d.nomem && json_equal(copy, (json_t *)value);
    json_decref(copy);
    free(d.type_error);
    free(d.unknown);
    return d.nomem ? CK_ENOMEM : same;
}
