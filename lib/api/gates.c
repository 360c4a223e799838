/*
 * gates.c - feature-gated API fields, driven by the schemas (Kubernetes'
 * dropDisabled*Fields and ratcheted enum validation, described once).
 *
 * A property may carry "x-ckube-feature-gate": "<Gate>": while the gate is
 * off, a create drops the field, and an update drops it only when the old
 * object did not already use it at that place (so turning a gate off never
 * destroys data). A string schema may carry "x-ckube-feature-gated-values":
 * {"<value>": "<Gate>"}: such a value is refused while its gate is off,
 * unless the old object already had it there (ratcheting). Whatever is
 * present is validated as usual, gate or no gate.
 *
 * "At that place" follows the schema: an old value counts when it sits at
 * the same path, any element of a list standing for every element (as
 * Kubernetes asks "does any container of the old pod use it").
 *
 * Which gates exist is for the kinds to say (struct ck_kind's features; a
 * gate's default applies when the caller gives no ck_feature_enabled_fn).
 *
 * Threading: pure functions over the caller's values; the feature list is
 * the kind registry's, immutable once read.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"
#include "internal.h"

#define MAX_DEPTH 64

struct walk {
    const struct ck_schemas *set;
    ck_feature_enabled_fn enabled;
    void *ctx;
    struct ck_field_errors *errs; /* NULL: drop disabled fields; else validate values */
    bool nomem;                   /* an allocation failed: what was decided may be wrong */
};

static bool gate_on(const struct walk *w, const char *gate)
{
    if (w->enabled)
        return w->enabled(w->ctx, gate);
    size_t n = 0;
    const struct ck_api_feature *features = ck_api_features(&n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(features[i].name, gate) == 0)
            return features[i].default_on;
    return false;
}

/* A keyword on a property or, through $ref/allOf, on the schema it names. */
static const json_t *keyword(const struct walk *w, const json_t *prop, const char *name)
{
    const json_t *v = json_object_get(prop, name);
    return v ? v : json_object_get(ck__schema_resolve(w->set, prop), name);
}

/* Appends v to *out, made on the first value. */
static void old_found(struct walk *w, json_t **out, json_t *v)
{
    if (!*out && !(*out = json_array()))
        w->nomem = true;
    else if (json_array_append(*out, v) < 0)
        w->nomem = true;
}

/*
 * Every old value under key (olds: the old values at this place), or NULL for
 * none: a create, or an old object without this field, allocates nothing here.
 */
static json_t *olds_at(struct walk *w, const json_t *olds, const char *key)
{
    json_t *out = NULL;
    size_t i;
    json_t *old;
    json_array_foreach(olds, i, old)
    {
        json_t *v = key ? json_object_get(old, key) : old;
        if (!v)
            continue;
        if (!key && json_is_array(v)) {
            size_t j;
            json_t *item;
            json_array_foreach(v, j, item)
            {
                old_found(w, &out, item);
            }
        } else if (key) {
            old_found(w, &out, v);
        }
    }
    return out;
}

static bool olds_contain(const json_t *olds, const json_t *v)
{
    size_t i;
    json_t *old;
    json_array_foreach(olds, i, old)
    {
        if (json_equal(old, (json_t *)v))
            return true;
    }
    return false;
}

/* Refuses a gated enum value whose gate is off and that old did not have. */
static void check_value(struct walk *w, const json_t *schema, const json_t *v, const json_t *olds,
                        const char *path)
{
    const json_t *gated = keyword(w, schema, "x-ckube-feature-gated-values");
    const char *gate = json_string_value(json_object_get(gated, json_string_value(v)));
    if (!gate || gate_on(w, gate) || olds_contain(olds, v))
        return;
    /* "supported values" lists what is enabled now, as Kubernetes' message does */
    char *list = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&list, &len);
    size_t i, n = 0;
    json_t *allowed;
    json_array_foreach(keyword(w, schema, "enum"), i, allowed)
    {
        const char *value = json_string_value(allowed);
        const char *value_gate = json_string_value(json_object_get(gated, value ? value : ""));
        if (f && value && (!value_gate || gate_on(w, value_gate)))
            fprintf(f, "%s\"%s\"", n++ ? ", " : "", value);
    }
    if (f)
        fclose(f);
    if (!f || !list)
        w->nomem = true;
    ck_field_errors_add(w->errs, CK_FIELD_NOT_SUPPORTED, path, json_string_value(v), true,
                        "supported values: %s", list ? list : "");
    free(list);
}

static void walk_value(struct walk *w, const json_t *schema_in, json_t *v, const json_t *olds,
                       char *path, size_t size, int depth);

/* v[key] (child), declared by prop: dropped while its gate is off and nothing old uses it. */
static void walk_member(struct walk *w, json_t *v, const char *key, const json_t *prop,
                        json_t *child, const json_t *olds, char *path, size_t size, int depth)
{
    size_t at = strlen(path);
    json_t *old_children = olds_at(w, olds, key);
    const char *gate = json_string_value(keyword(w, prop, "x-ckube-feature-gate"));
    if (!w->errs && gate && !gate_on(w, gate) && json_array_size(old_children) == 0) {
        json_object_del(v, key); /* the gate is off and nothing old uses it */
    } else {
        ck__path_push(path, size, at, at ? "." : "", key, NULL);
        walk_value(w, prop, child, old_children, path, size, depth + 1);
        path[at] = '\0';
    }
    json_decref(old_children);
}

static void walk_value(struct walk *w, const json_t *schema_in, json_t *v, const json_t *olds,
                       char *path, size_t size, int depth)
{
    const json_t *schema = ck__schema_resolve(w->set, schema_in);
    if (!schema || depth > MAX_DEPTH || !ck__schema_reaches(w->set, schema_in, CK__REACHES_GATES))
        return; /* (most of an object is out of every gate's reach) */
    size_t at = strlen(path);
    if (json_is_string(v) && w->errs) {
        check_value(w, schema_in, v, olds, path);
    } else if (json_is_array(v)) {
        const json_t *items = json_object_get(schema, "items");
        json_t *old_items = olds_at(w, olds, NULL);
        size_t i;
        json_t *item;
        json_array_foreach(v, i, item)
        {
            ck__path_push_index(path, size, at, i);
            if (items)
                walk_value(w, items, item, old_items, path, size, depth + 1);
        }
        json_decref(old_items);
    } else if (json_is_object(v)) {
        const json_t *props = json_object_get(schema, "properties");
        const char *key;
        json_t *prop, *child;
        void *next;
        /* by whichever is smaller: a value usually holds few of its schema's properties */
        if (json_object_size(v) < json_object_size(props)) {
            json_object_foreach_safe(v, next, key, child)
            {
                if ((prop = json_object_get(props, key)))
                    walk_member(w, v, key, prop, child, olds, path, size, depth);
            }
        } else {
            json_object_foreach((json_t *)props, key, prop)
            {
                if ((child = json_object_get(v, key)))
                    walk_member(w, v, key, prop, child, olds, path, size, depth);
            }
        }
        const json_t *extra = json_object_get(schema, "additionalProperties");
        if (json_is_object(extra)) {
            json_object_foreach(v, key, child)
            {
                json_t *old_children = olds_at(w, olds, key);
                ck__path_push(path, size, at, at ? "." : "", key, NULL);
                walk_value(w, extra, child, old_children, path, size, depth + 1);
                json_decref(old_children);
            }
        }
    }
    path[at] = '\0';
}

static void walk_object(struct walk *w, const char *name, json_t *obj, const json_t *old)
{
    const json_t *schema = ck_schemas_get(w->set, name);
    if (!schema || !obj)
        return;
    json_t *olds = NULL; /* none for a create */
    if (old)
        old_found(w, &olds, (json_t *)old);
    if (w->nomem) {
        json_decref(olds);
        return;
    }
    char path[1024] = "";
    walk_value(w, schema, obj, olds, path, sizeof(path), 0);
    json_decref(olds);
}

int ck_schema_drop_disabled(const struct ck_schemas *set, const char *name, json_t *obj,
                            const json_t *old, ck_feature_enabled_fn enabled, void *ctx)
{
    struct walk w = {.set = set, .enabled = enabled, .ctx = ctx};
    walk_object(&w, name, obj, old);
    return w.nomem ? CK_ENOMEM : 0;
}

void ck_schema_validate_gated_values(const struct ck_schemas *set, const char *name,
                                     const json_t *obj, const json_t *old,
                                     ck_feature_enabled_fn enabled, void *ctx,
                                     struct ck_field_errors *errs)
{
    struct walk w = {.set = set, .enabled = enabled, .ctx = ctx, .errs = errs};
    walk_object(&w, name, (json_t *)obj, old);
    if (w.nomem)
        errs->nomem = true;
}
