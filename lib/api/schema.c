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
 * A set may lie over another (ck_schemas_new_layered()): a custom resource's
 * few schemas resolve ObjectMeta and the other built-in names through the
 * set below, so 1,000 CRDs cost 1,000 small sets, not 1,000 copies.
 *
 * Threading: a set is immutable after ck_schemas_new(); all functions only
 * read it.
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
static const json_t *resolve(const struct ck_schemas *set, const json_t *schema,
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

const json_t *ck__schema_resolve(const struct ck_schemas *set, const json_t *schema)
{
    return schema ? resolve(set, schema, NULL) : NULL;
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
    if (r < 0) {
        ck_schemas_free(set);
        return r;
    }
    *ret_set = set;
    return 0;
}

struct ck_schemas *ck_schemas_free(struct ck_schemas *set)
{
    if (set) {
        json_decref(set->all);
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
    int n = snprintf(p->buf + p->len, sizeof(p->buf) - p->len, "%s%s", p->len ? "." : "", name);
    if (n > 0)
        p->len = p->len + (size_t)n < sizeof(p->buf) ? p->len + (size_t)n : sizeof(p->buf) - 1;
    return saved;
}

static size_t path_push_index(struct path *p, size_t i)
{
    size_t saved = p->len;
    int n = snprintf(p->buf + p->len, sizeof(p->buf) - p->len, "[%zu]", i);
    if (n > 0)
        p->len = p->len + (size_t)n < sizeof(p->buf) ? p->len + (size_t)n : sizeof(p->buf) - 1;
    return saved;
}

static size_t path_push_key(struct path *p, const char *key)
{
    size_t saved = p->len;
    int n = snprintf(p->buf + p->len, sizeof(p->buf) - p->len, "[%s]", key);
    if (n > 0)
        p->len = p->len + (size_t)n < sizeof(p->buf) ? p->len + (size_t)n : sizeof(p->buf) - 1;
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
                         struct path *p, int depth);

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
                decode_value(d, child ? child : extra, value, self_name, p, depth + 1);
        } else if (json_is_true(extra)) {
            /* additionalProperties: true keeps anything */
        } else {
            unknown_field(d, p);
            json_object_del(obj, key);
        }
        path_pop(p, saved);
    }
}

static void decode_value(struct decode *d, const json_t *schema_in, json_t *v, const char *parent,
                         struct path *p, int depth)
{
    const char *ref_name = NULL;
    const json_t *schema = resolve(d->set, schema_in, &ref_name);
    if (!schema || depth > MAX_DEPTH)
        return;
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
                decode_value(d, items, item, parent, p, depth + 1);
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

    struct decode d = {.set = set, .validation = validation, .warnings = warnings};
    struct path p = {.len = 0};
    /* Enter through a $ref so the root's type name appears in messages. */
    char ref[512];
    snprintf(ref, sizeof(ref), REF_PREFIX "%s", name);
    json_t *root = json_pack("{s:s}", "$ref", ref);
    if (root)
        decode_value(&d, root, obj, short_name(name), &p, 0);
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
                         int depth)
{
    const json_t *schema = resolve(set, schema_in, NULL);
    if (!schema || depth > MAX_DEPTH ||
        json_is_true(json_object_get(schema, "x-kubernetes-preserve-unknown-fields")))
        return 0;
    if (json_is_array(v)) {
        const json_t *items = json_object_get(schema, "items");
        size_t i;
        json_t *item;
        json_array_foreach(v, i, item)
        {
            if (items && default_value(set, items, item, depth + 1) < 0)
                return CK_ENOMEM;
        }
        return 0;
    }
    if (!json_is_object(v))
        return 0;
    const json_t *props = json_object_get(schema, "properties");
    const char *key;
    const json_t *prop;
    json_object_foreach((json_t *)props, key, prop)
    {
        const json_t *def = default_of(set, prop);
        /* json_object_set_new frees the value it could not insert */
        if (!json_object_get(v, key) && def && json_object_set_new(v, key, json_deep_copy(def)) < 0)
            return CK_ENOMEM;
        json_t *child = json_object_get(v, key);
        if (child && default_value(set, prop, child, depth + 1) < 0)
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
                default_value(set, prop_schema, json_object_get(v, field), depth + 1) < 0)
                return CK_ENOMEM;
        }
    }
    const json_t *extra = json_object_get(schema, "additionalProperties");
    if (json_is_object(extra)) {
        json_t *value;
        json_object_foreach(v, key, value)
        {
            if (default_value(set, extra, value, depth + 1) < 0)
                return CK_ENOMEM;
        }
    }
    return 0;
}

int ck_schema_default(const struct ck_schemas *set, const char *name, json_t *obj)
{
    const json_t *schema = ck_schemas_get(set, name);
    return schema ? default_value(set, schema, obj, 0) : 0;
}

/* ---- validation --------------------------------------------------------- */

/* "supported values: ..." for an enum; caller frees; NULL when out of memory. */
static char *render_enum(const json_t *values)
{
    struct ck__buf b = {0};
    ck__buf_adds(&b, "supported values: ");
    size_t i;
    json_t *value;
    json_array_foreach(values, i, value)
    {
        char *piece = ck__json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT, NULL);
        if (!piece)
            return ck__buf_release(&b), NULL;
        ck__buf_printf(&b, "%s%s", i ? ", " : "", piece);
        free(piece);
    }
    return ck__buf_take(&b);
}

static void validate_value(const struct ck_schemas *set, const json_t *schema_in, const json_t *v,
                           struct path *p, struct ck_field_errors *errs, int depth)
{
    const json_t *schema = resolve(set, schema_in, NULL);
    if (!schema || depth > MAX_DEPTH ||
        json_is_true(json_object_get(schema, "x-kubernetes-preserve-unknown-fields")))
        return;

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
            char *supported = render_enum(allowed);
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
                validate_value(set, items, item, p, errs, depth + 1);
            path_pop(p, saved);
        }
        return;
    }
    if (!json_is_object(v))
        return;
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
    const json_t *props = json_object_get(schema, "properties");
    const json_t *extra = json_object_get(schema, "additionalProperties");
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)v, key, value)
    {
        const json_t *child = json_object_get(props, key);
        if (child) {
            size_t saved = path_push_field(p, key);
            validate_value(set, child, value, p, errs, depth + 1);
            path_pop(p, saved);
        } else if (json_is_object(extra)) {
            size_t saved = path_push_key(p, key);
            validate_value(set, extra, value, p, errs, depth + 1);
            path_pop(p, saved);
        }
    }
}

void ck_schema_validate(const struct ck_schemas *set, const char *name, const json_t *obj,
                        struct ck_field_errors *errs)
{
    const json_t *schema = ck_schemas_get(set, name);
    struct path p = {.len = 0};
    if (schema)
        validate_value(set, schema, obj, &p, errs, 0);
}
