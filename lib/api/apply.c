/*
 * apply.c - server-side apply and the managedFields of every write, driven
 * by the kinds' schemas.
 *
 * The schema says how each value is owned (structured-merge-diff's element
 * relationships, read from the OpenAPI extensions as kube-openapi's
 * schemaconv reads them):
 *   struct   an object with properties: each field owned on its own
 *   map      an object with additionalProperties: each key owned on its own
 *   atomic   x-kubernetes-map-type/list-type atomic, lists without merge
 *            keys, scalars: owned and replaced whole
 *   set      x-kubernetes-list-type set (or a merge-strategy list of
 *            scalars): each value owned on its own (v:)
 *   map list x-kubernetes-list-type map with x-kubernetes-list-map-keys (or
 *            patch strategy merge with x-kubernetes-patch-merge-key): each
 *            element owned on its own by its keys (k:), fields inside it too
 * A value without a schema (x-kubernetes-preserve-unknown-fields) is owned
 * as structured-merge-diff deduces: objects per key, lists whole.
 *
 * Four walks over value and schema carry the algorithm of
 * structured-merge-diff's merge.Updater (Apply, Update, prune):
 *   fieldset_of  the fields a value sets (typed.ToFieldSet)
 *   compare      what changed between two values: added or modified, and
 *                removed (typed.Compare)
 *   merge        config merged into live (typed.Merge)
 *   remove       drop the fields of a set from a value (typed.RemoveItems)
 * The managers, their entries and the conflict message follow
 * k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager: stripped metadata,
 * reset fields per subresource, time on the entries that took fields, the
 * cap on Update managers, the "before-first-apply" manager for objects
 * without managedFields, and kubectl's upgrade from client-side apply
 * (lastappliedmanager.go, lastappliedupdater.go).
 *
 * Everything here is pure: inputs are never changed, results are new.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define MAX_DEPTH 64

static const char last_applied_annotation[] = "kubectl.kubernetes.io/last-applied-configuration";

enum shape {
    SHAPE_UNTYPED, /* no schema: objects per key, lists atomic */
    SHAPE_SCALAR,
    SHAPE_STRUCT,
    SHAPE_MAP,
    SHAPE_ATOMIC,
    SHAPE_SET,
    SHAPE_LIST_MAP,
};

struct type {
    enum shape shape;
    const json_t *schema; /* resolved; NULL when untyped */
    const json_t *keys;   /* SHAPE_LIST_MAP: the key field names */
};

struct walk {
    const struct ck_schemas *set;
    struct ck_err *err;
    int failed; /* the first failure: CK_ENOMEM or CK_EINVAL (with err filled) */
};

static void nomem(struct walk *w)
{
    if (!w->failed)
        w->failed = ck_err_no_memory(w->err);
}

static const char *ext_string(const json_t *prop, const json_t *resolved, const char *name)
{
    const char *v = json_string_value(json_object_get(prop, name));
    return v ? v : json_string_value(json_object_get(resolved, name));
}

static struct type find_type(const struct walk *w, const json_t *prop);

/* How a value of prop is walked: for a node of the set, found once per thread (ck__memo). */
static struct type classify(const struct walk *w, const json_t *prop)
{
    bool hit = false;
    struct ck__memo_slot *slot = ck__memo_find(CK__MEMO_SHAPE, w->set, prop, &hit);
    if (!slot)
        return find_type(w, prop);
    if (!hit) {
        struct type t = find_type(w, prop);
        *slot = (struct ck__memo_slot){
            ck__schemas_serial(w->set), prop, {t.schema, t.keys}, (int)t.shape};
    }
    return (struct type){(enum shape)slot->tag, slot->value[0], slot->value[1]};
}

static struct type find_type(const struct walk *w, const json_t *prop)
{
    struct type t = {SHAPE_UNTYPED, NULL, NULL};
    if (!prop)
        return t;
    const json_t *r = ck__schema_resolve(w->set, prop);
    if (!r || json_is_true(json_object_get(prop, "x-kubernetes-preserve-unknown-fields")) ||
        json_is_true(json_object_get(r, "x-kubernetes-preserve-unknown-fields")))
        return t;
    t.schema = r;
    if (json_is_true(json_object_get(r, "x-kubernetes-int-or-string"))) {
        t.shape = SHAPE_SCALAR;
        return t;
    }
    const char *type = json_string_value(json_object_get(r, "type"));
    if ((type && strcmp(type, "array") == 0) || json_object_get(r, "items")) {
        const char *list_type = ext_string(prop, r, "x-kubernetes-list-type");
        const json_t *keys = json_object_get(prop, "x-kubernetes-list-map-keys");
        if (!keys)
            keys = json_object_get(r, "x-kubernetes-list-map-keys");
        const char *strategy = ext_string(prop, r, "x-kubernetes-patch-strategy");
        const char *merge_key = ext_string(prop, r, "x-kubernetes-patch-merge-key");
        t.shape = SHAPE_ATOMIC;
        if (list_type && strcmp(list_type, "set") == 0)
            t.shape = SHAPE_SET;
        else if (list_type && strcmp(list_type, "map") == 0 && json_array_size(keys))
            t.shape = SHAPE_LIST_MAP, t.keys = keys;
        else if (!list_type && strategy && strstr(strategy, "merge"))
            t.shape = merge_key ? SHAPE_LIST_MAP : SHAPE_SET;
        return t;
    }
    const char *map_type = ext_string(prop, r, "x-kubernetes-map-type");
    bool object = (type && strcmp(type, "object") == 0) || json_object_get(r, "properties") ||
                  json_object_get(r, "additionalProperties");
    if (object && map_type && strcmp(map_type, "atomic") == 0)
        t.shape = SHAPE_ATOMIC;
    else if (json_object_get(r, "properties"))
        t.shape = SHAPE_STRUCT;
    else if (object)
        t.shape = SHAPE_MAP;
    else
        t.shape = SHAPE_SCALAR;
    return t;
}

/* The key field names of a map list as a JSON array borrowed or owned by *hold. */
static const json_t *list_keys(const json_t *prop, const struct type *t, json_t **hold)
{
    *hold = NULL;
    if (t->keys)
        return t->keys;
    const char *merge_key =
        json_string_value(json_object_get(prop, "x-kubernetes-patch-merge-key"));
    if (!merge_key)
        merge_key = json_string_value(json_object_get(t->schema, "x-kubernetes-patch-merge-key"));
    *hold = json_pack("[s]", merge_key ? merge_key : "name");
    return *hold;
}

/* How a value is walked: by its members, as a keyed list, as a set, or whole. */
enum how { HOW_LEAF, HOW_FIELDS, HOW_LIST_MAP, HOW_SET };

static enum how how_of(const struct type *t, const json_t *v)
{
    switch (t->shape) {
    case SHAPE_UNTYPED:
    case SHAPE_STRUCT:
    case SHAPE_MAP:
        return json_is_object(v) ? HOW_FIELDS : HOW_LEAF;
    case SHAPE_LIST_MAP:
        return json_is_array(v) ? HOW_LIST_MAP : HOW_LEAF;
    case SHAPE_SET:
        return json_is_array(v) ? HOW_SET : HOW_LEAF;
    default:
        return HOW_LEAF;
    }
}

/* The schema of member key of an object of type t (NULL: untyped), and whether it is declared. */
static const json_t *member_prop(const struct type *t, const char *key, bool *declared)
{
    *declared = false;
    if (!t->schema)
        return NULL;
    const json_t *prop = json_object_get(json_object_get(t->schema, "properties"), key);
    if (prop) {
        *declared = true;
        return prop;
    }
    const json_t *extra = json_object_get(t->schema, "additionalProperties");
    return json_is_object(extra) ? extra : NULL;
}

static const json_t *items_prop(const struct type *t)
{
    return t->schema ? json_object_get(t->schema, "items") : NULL;
}

/*
 * True when Go always emits member key of t, so that it is never "added" or
 * "removed" itself (a non-pointer struct in Go's zero value): what the schema
 * marks x-ckube-always-emit, and metadata, spec and status, which the API
 * conventions make non-pointer structs wherever they appear.
 */
static bool always_emitted(const struct type *t, const char *key, int depth)
{
    (void)depth;
    if (t->shape == SHAPE_STRUCT &&
        (strcmp(key, "metadata") == 0 || strcmp(key, "spec") == 0 || strcmp(key, "status") == 0))
        return true;
    const json_t *emit = t->schema ? json_object_get(t->schema, "x-ckube-always-emit") : NULL;
    size_t i;
    json_t *name;
    json_array_foreach(emit, i, name)
    {
        if (json_is_string(name) && strcmp(json_string_value(name), key) == 0)
            return true;
    }
    return false;
}

/* "f:<key>" (caller frees), or NULL when out of memory; on every member of every walk. */
static char *field_element(const char *key)
{
    size_t n = strlen(key);
    char *e = ck__malloc(n + 3);
    if (e) {
        e[0] = 'f';
        e[1] = ':';
        memcpy(e + 2, key, n + 1);
    }
    return e;
}

/*
 * The path element of a list item: k:{keys} for a map list (a key field the
 * item omits takes its schema default), v:<value> for a set. NULL with
 * w->failed set (400 for a missing key, else out of memory).
 */
static char *item_element(struct walk *w, const struct type *list, const json_t *prop,
                          const json_t *item, size_t index)
{
    char *text = NULL;
    char *e = NULL;
    if (list->shape == SHAPE_SET || how_of(list, item) == HOW_SET) {
        text = ck__json_dumps(item, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS, NULL);
        if (!text || asprintf(&e, "v:%s", text) < 0)
            e = NULL, nomem(w);
        free(text);
        return e;
    }
    json_t *hold = NULL;
    const json_t *keys = list_keys(prop, list, &hold);
    if (!keys) {
        nomem(w);
        return NULL;
    }
    json_t *fields = json_object();
    struct type item_type = classify(w, items_prop(list));
    size_t i;
    json_t *name;
    json_array_foreach(keys, i, name)
    {
        const char *k = json_string_value(name);
        const json_t *v = json_object_get(item, k);
        if (!v) {
            bool declared;
            v = json_object_get(member_prop(&item_type, k, &declared), "default");
            if (!v)
                v = json_object_get(
                    ck__schema_resolve(w->set, member_prop(&item_type, k, &declared)), "default");
        }
        if (!v) {
            if (!w->failed)
                w->failed = ck_err_status(w->err, "BadRequest",
                                          "element %zu: associative list with keys has an element "
                                          "that omits key field \"%s\" (and doesn't have default "
                                          "value)",
                                          index, k ? k : "");
            json_decref(fields);
            json_decref(hold);
            return NULL;
        }
        if (!fields || json_object_set_new(fields, k, ck__json_copy(v)) < 0) {
            json_decref(fields);
            json_decref(hold);
            nomem(w); /* never a k: missing a key */
            return NULL;
        }
    }
    json_decref(hold);
    text = fields ? ck__json_dumps(fields, JSON_COMPACT | JSON_SORT_KEYS, NULL) : NULL;
    json_decref(fields);
    if (!text || asprintf(&e, "k:%s", text) < 0)
        e = NULL, nomem(w);
    free(text);
    return e;
}

static void mark(struct walk *w, json_t *node)
{
    if (node && json_object_set_new(node, ".", json_object()) < 0)
        nomem(w);
    if (!node)
        nomem(w);
}

/* Removes node's child key when it ended up empty. */
static void prune_empty(json_t *node, const char *key)
{
    json_t *child = json_object_get(node, key);
    if (child && json_object_size(child) == 0)
        json_object_del(node, key);
}

/* ---- ToFieldSet ------------------------------------------------------------ */

/* Adds to node (the set node of v's path) the members below v. */
static void fieldset_of(struct walk *w, const json_t *prop, const json_t *v, json_t *node,
                        int depth)
{
    struct type t = classify(w, prop);
    enum how how = how_of(&t, v);
    if (w->failed || depth > MAX_DEPTH || how == HOW_LEAF)
        return;
    if (how == HOW_FIELDS) {
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)v, key, val)
        {
            bool declared;
            const json_t *child_prop = member_prop(&t, key, &declared);
            struct type ct = classify(w, child_prop);
            char *pe = field_element(key);
            json_t *child = pe ? ck__object_at(node, pe) : NULL;
            if (!child) {
                free(pe);
                nomem(w);
                return;
            }
            fieldset_of(w, child_prop, val, child, depth + 1);
            if (how_of(&ct, val) == HOW_LEAF || json_is_null(val) ||
                (json_is_object(val) && json_object_size(val) == 0) || !declared)
                mark(w, child);
            prune_empty(node, pe);
            free(pe);
        }
        return;
    }
    size_t i;
    json_t *item;
    json_array_foreach(v, i, item)
    {
        char *pe = item_element(w, &t, prop, item, i);
        json_t *child = pe ? ck__object_at(node, pe) : NULL;
        if (!child) {
            free(pe);
            if (!w->failed)
                nomem(w);
            return;
        }
        mark(w, child);
        if (how == HOW_LIST_MAP)
            fieldset_of(w, items_prop(&t), item, child, depth + 1);
        free(pe);
    }
}

/* ---- Compare ---------------------------------------------------------------- */

/* Marks node and every path below v in it (a subtree added or removed whole). */
static void mark_all(struct walk *w, const json_t *prop, const json_t *v, json_t *node, int depth)
{
    mark(w, node);
    struct type t = classify(w, prop);
    enum how how = how_of(&t, v);
    if (w->failed || depth > MAX_DEPTH || how == HOW_LEAF)
        return;
    if (how == HOW_FIELDS) {
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)v, key, val)
        {
            bool declared;
            char *pe = field_element(key);
            json_t *child = pe ? ck__object_at(node, pe) : NULL;
            if (child)
                mark_all(w, member_prop(&t, key, &declared), val, child, depth + 1);
            else
                nomem(w);
            free(pe);
        }
        return;
    }
    size_t i;
    json_t *item;
    json_array_foreach(v, i, item)
    {
        /* an element of a stored object without its key is not owned alone: skipped */
        struct ck_err err = {0};
        struct walk quiet = {w->set, &err, 0};
        char *pe = item_element(&quiet, &t, prop, item, i);
        ck_err_release(&err);
        json_t *child = pe ? ck__object_at(node, pe) : NULL;
        if (child)
            mark_all(w, how == HOW_LIST_MAP ? items_prop(&t) : NULL, item, child, depth + 1);
        else if (pe || quiet.failed == CK_ENOMEM)
            nomem(w);
        free(pe);
    }
}

static void compare_children(struct walk *w, const json_t *prop, const json_t *lhs,
                             const json_t *rhs, json_t *changed, json_t *removed, int depth);

/*
 * Compares lhs and rhs (either may be NULL) at child pe of the nodes
 * parent_changed and parent_removed. emitted: the field is present in Go's
 * zero value of its parent, so its absence is no removal or addition of it.
 */
static void compare_at(struct walk *w, const json_t *prop, const json_t *lhs, const json_t *rhs,
                       json_t *parent_changed, json_t *parent_removed, const char *pe, bool emitted,
                       int depth)
{
    if (lhs && rhs && json_equal((json_t *)lhs, (json_t *)rhs))
        return; /* nothing below changed: most of an update, and no allocation for it */
    struct type t = classify(w, prop);
    enum how hl = lhs ? how_of(&t, lhs) : HOW_LEAF, hr = rhs ? how_of(&t, rhs) : HOW_LEAF;
    json_t *cn = ck__object_at(parent_changed, pe);
    json_t *rn = ck__object_at(parent_removed, pe);
    if (!cn || !rn) {
        nomem(w);
        return;
    }
    if (lhs && rhs) {
        if (hl == hr && hl != HOW_LEAF)
            compare_children(w, prop, lhs, rhs, cn, rn, depth + 1);
        else if (!json_equal((json_t *)lhs, (json_t *)rhs))
            mark(w, cn);
    } else if (rhs) {
        if (emitted && hr != HOW_LEAF)
            compare_children(w, prop, NULL, rhs, cn, rn, depth + 1);
        else
            mark_all(w, prop, rhs, cn, depth);
    } else if (lhs) {
        if (emitted && hl != HOW_LEAF)
            compare_children(w, prop, lhs, NULL, cn, rn, depth + 1);
        else
            mark_all(w, prop, lhs, rn, depth);
    }
    prune_empty(parent_changed, pe);
    prune_empty(parent_removed, pe);
}

/* Finds the item of list whose element is pe; NULL when none. */
static const json_t *find_item(struct walk *w, const struct type *t, const json_t *prop,
                               const json_t *list, const char *pe, size_t *ret_index)
{
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item)
    {
        struct ck_err err = {0};
        struct walk quiet = {w->set, &err, 0};
        char *e = item_element(&quiet, t, prop, item, i);
        bool same = e && strcmp(e, pe) == 0;
        free(e);
        ck_err_release(&err);
        if (quiet.failed == CK_ENOMEM) {
            nomem(w);
            return NULL;
        }
        if (same) {
            if (ret_index)
                *ret_index = i;
            return item;
        }
    }
    return NULL;
}

/*
 * The path element of every item of list, computed once (NULL where an item
 * has none: a keyed item without its key). NULL when out of memory (then
 * w->failed is set). Free with free_elements().
 */
static char **elements_of(struct walk *w, const struct type *t, const json_t *prop,
                          const json_t *list)
{
    size_t n = json_array_size(list);
    char **out = ck__calloc(n ? n : 1, sizeof(*out));
    if (!out) {
        nomem(w);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        struct ck_err err = {0};
        struct walk quiet = {w->set, &err, 0};
        out[i] = item_element(&quiet, t, prop, json_array_get(list, i), i);
        ck_err_release(&err);
        if (quiet.failed == CK_ENOMEM) {
            nomem(w);
            break;
        }
    }
    return out;
}

static void free_elements(char **elements, size_t n)
{
    for (size_t i = 0; elements && i < n; i++)
        free(elements[i]);
    free(elements);
}

/* The index of pe among elements, or -1. */
static ssize_t index_of(char *const *elements, size_t n, const char *pe)
{
    for (size_t i = 0; i < n; i++)
        if (elements[i] && strcmp(elements[i], pe) == 0)
            return (ssize_t)i;
    return -1;
}

static void compare_children(struct walk *w, const json_t *prop, const json_t *lhs,
                             const json_t *rhs, json_t *changed, json_t *removed, int depth)
{
    struct type t = classify(w, prop);
    const json_t *any = lhs ? lhs : rhs;
    enum how how = how_of(&t, any);
    if (w->failed || depth > MAX_DEPTH)
        return;
    if (how == HOW_FIELDS) {
        const char *key;
        json_t *val;
        for (int side = 0; side < 2; side++) {
            const json_t *obj = side ? rhs : lhs;
            json_object_foreach((json_t *)obj, key, val)
            {
                if (side && lhs && json_object_get(lhs, key))
                    continue; /* compared from the left */
                bool declared;
                const json_t *child_prop = member_prop(&t, key, &declared);
                char *pe = field_element(key);
                if (!pe) {
                    nomem(w);
                    return;
                }
                compare_at(w, child_prop, json_object_get(lhs, key), json_object_get(rhs, key),
                           changed, removed, pe, always_emitted(&t, key, depth - 1), depth);
                free(pe);
            }
        }
        return;
    }
    /* lists by element: items of lhs, then those only rhs has */
    size_t nl = json_array_size(lhs), nr = json_array_size(rhs);
    char **el = elements_of(w, &t, prop, lhs);
    char **er = el ? elements_of(w, &t, prop, rhs) : NULL;
    for (size_t i = 0; er && !w->failed && i < nl + nr; i++) {
        bool left = i < nl;
        const char *pe = left ? el[i] : er[i - nl];
        if (!pe)
            continue; /* an element without its key: not owned alone */
        ssize_t other = left ? index_of(er, nr, pe) : index_of(el, nl, pe);
        if (!left && other >= 0)
            continue; /* compared from the left */
        const json_t *l = left ? json_array_get(lhs, i) : NULL;
        const json_t *r = left ? (other >= 0 ? json_array_get(rhs, (size_t)other) : NULL)
                               : json_array_get(rhs, i - nl);
        if (how == HOW_SET) {
            if (!l || !r)
                mark(w, ck__object_at(l ? removed : changed, pe));
        } else {
            compare_at(w, items_prop(&t), l, r, changed, removed, pe, false, depth);
        }
    }
    free_elements(el, nl);
    free_elements(er, nr);
}

/* ---- Merge ------------------------------------------------------------------ */

static json_t *merge(struct walk *w, const json_t *prop, const json_t *lhs, const json_t *rhs,
                     int depth)
{
    if (!rhs)
        return ck__json_copy(lhs);
    struct type t = classify(w, prop);
    enum how hl = lhs ? how_of(&t, lhs) : HOW_LEAF, hr = how_of(&t, rhs);
    if (!lhs || hl != hr || hr == HOW_LEAF || depth > MAX_DEPTH)
        return ck__json_copy(rhs);
    json_t *out = ck__json_copy(lhs);
    if (!out)
        return NULL;
    if (hr == HOW_FIELDS) {
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)rhs, key, val)
        {
            bool declared;
            json_t *m = merge(w, member_prop(&t, key, &declared), json_object_get(lhs, key), val,
                              depth + 1);
            if (!m || json_object_set_new(out, key, m) < 0)
                return json_decref(out), NULL;
        }
        return out;
    }
    size_t i, nl = json_array_size(lhs);
    json_t *item;
    char **el = elements_of(w, &t, prop, lhs);
    if (!el)
        return json_decref(out), NULL;
    json_array_foreach(rhs, i, item)
    {
        char *pe = item_element(w, &t, prop, item, i);
        ssize_t at = pe ? index_of(el, nl, pe) : -1;
        free(pe);
        if (w->failed)
            break;
        const json_t *existing = at >= 0 ? json_array_get(out, (size_t)at) : NULL;
        if (hr == HOW_SET && existing)
            continue;
        json_t *m = hr == HOW_SET ? ck__json_copy(item)
                                  : merge(w, items_prop(&t), existing, item, depth + 1);
        if (!m || (existing ? json_array_set_new(out, (size_t)at, m)
                            : json_array_append_new(out, m)) < 0) {
            nomem(w);
            break;
        }
    }
    free_elements(el, nl);
    if (w->failed)
        return json_decref(out), NULL;
    return out;
}

/* ---- RemoveItems ------------------------------------------------------------- */

/* Removes from v the members of remove that nothing in owned keeps. */
static void remove_items(struct walk *w, const json_t *prop, json_t *v, const json_t *remove,
                         const json_t *owned, int depth)
{
    struct type t = classify(w, prop);
    enum how how = how_of(&t, v);
    if (how == HOW_LEAF || depth > MAX_DEPTH)
        return;
    const char *pe;
    json_t *sub;
    json_object_foreach((json_t *)remove, pe, sub)
    {
        if (strcmp(pe, ".") == 0)
            continue;
        const json_t *sub_owned = owned ? json_object_get(owned, pe) : NULL;
        bool drop = json_object_get(sub, ".") && !sub_owned;
        if (how == HOW_FIELDS) {
            if (strncmp(pe, "f:", 2) != 0)
                continue;
            json_t *child = json_object_get(v, pe + 2);
            bool declared;
            if (child && drop) {
                json_object_del(v, pe + 2);
            } else if (child) {
                remove_items(w, member_prop(&t, pe + 2, &declared), child, sub, sub_owned,
                             depth + 1);
                /* a map or list emptied here is omitted, as Go omits empty ones */
                if ((json_is_object(child) && json_object_size(child) == 0) ||
                    (json_is_array(child) && json_array_size(child) == 0))
                    json_object_del(v, pe + 2);
            }
            continue;
        }
        size_t at = 0;
        json_t *item = (json_t *)find_item(w, &t, prop, v, pe, &at);
        if (item && drop)
            json_array_remove(v, at);
        else if (item && how == HOW_LIST_MAP)
            remove_items(w, items_prop(&t), item, sub, sub_owned, depth + 1);
    }
}

/* ---- the field manager -------------------------------------------------------- */

/* The object's root "schema": its kind's schema. */
static const json_t *root_prop(const struct ck_schemas *set, const struct ck_kind *kind)
{
    return ck_schemas_get(set, kind->schema);
}

/* The metadata fields no manager owns. */
static const char *const stripped_metadata[] = {"name",
                                                "namespace",
                                                "creationTimestamp",
                                                "selfLink",
                                                "uid",
                                                "clusterName",
                                                "generation",
                                                "managedFields",
                                                "resourceVersion",
                                                "deletionTimestamp",
                                                "deletionGracePeriodSeconds"};

/* Whether who's subresource write owns anything under the object's member key. */
static bool owned_member(const struct ck_kind *kind, const char *subresource, const char *key)
{
    if (strcmp(key, "apiVersion") == 0 || strcmp(key, "kind") == 0)
        return false;
    if (subresource && strcmp(subresource, "status") == 0) /* the rest is reset for it */
        return strcmp(key, "status") == 0 || strcmp(key, "metadata") == 0;
    return strcmp(key, "status") != 0 || !ck_kind_subresource_part(kind, CK_SUBRESOURCE_STATUS);
}

/* Removes what no manager owns: stripped metadata and the fields reset for who's subresource. */
static void strip(json_t *s, const struct ck_kind *kind, const char *subresource)
{
    json_t *meta = json_object_get(s, "f:metadata");
    json_object_del(meta, ".");
    for (size_t i = 0; meta && i < CK__COUNT(stripped_metadata); i++) {
        char pe[64];
        snprintf(pe, sizeof(pe), "f:%s", stripped_metadata[i]);
        json_object_del(meta, pe);
    }
    prune_empty(s, "f:metadata");
    const char *key;
    void *tmp;
    json_t *val;
    json_object_foreach_safe(s, tmp, key, val)
    {
        if (strncmp(key, "f:", 2) == 0 && !owned_member(kind, subresource, key + 2))
            json_object_del(s, key);
    }
}

/*
 * A shallow copy of an object (or of its metadata, when meta) with only the members
 * strip() keeps: what it drops is never compared. Borrowed values; NULL for NULL.
 */
static json_t *owned_view(const json_t *obj, const struct ck_kind *kind, const char *subresource,
                          bool meta, struct walk *w)
{
    if (!json_is_object(obj))
        return json_incref((json_t *)obj);
    json_t *view = json_object();
    if (!view) {
        nomem(w);
        return NULL;
    }
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)obj, key, val)
    {
        bool kept = !meta ? owned_member(kind, subresource, key) : true;
        for (size_t i = 0; meta && kept && i < CK__COUNT(stripped_metadata); i++)
            kept = strcmp(key, stripped_metadata[i]) != 0;
        if (!kept)
            continue;
        json_t *v = !meta && strcmp(key, "metadata") == 0
                        ? owned_view(val, kind, subresource, true, w)
                        : json_incref(val);
        if (json_object_set_new(view, key, v) < 0) {
            json_decref(view);
            nomem(w);
            return NULL;
        }
    }
    return view;
}

/* changed (added or modified) and removed between old and obj, stripped. */
static int compare_objects(struct walk *w, const struct ck_kind *kind, const json_t *old,
                           const json_t *obj, const char *subresource, json_t **ret_changed,
                           json_t **ret_removed)
{
    json_t *changed = json_object(), *removed = json_object();
    json_t *lhs = owned_view(old, kind, subresource, false, w);
    json_t *rhs = owned_view(obj, kind, subresource, false, w);
    if (!changed || !removed)
        nomem(w);
    else if (!w->failed)
        compare_children(w, root_prop(w->set, kind), lhs, rhs, changed, removed, 1);
    json_decref(lhs);
    json_decref(rhs);
    if (!w->failed) {
        strip(changed, kind, subresource);
        strip(removed, kind, subresource);
        *ret_changed = changed;
        *ret_removed = removed;
        return 0;
    }
    json_decref(changed);
    json_decref(removed);
    return w->failed;
}

static char *api_version_of(const struct ck_kind *kind)
{
    char *s = NULL;
    if (asprintf(&s, "%s%s%s", kind->group, kind->group[0] ? "/" : "", kind->version) < 0)
        return NULL;
    return s;
}

static const char *sub_or_empty(const struct ck_field_manager *who)
{
    return who->subresource ? who->subresource : "";
}

/* Replaces entry i's set with set (taken); 0 or CK_ENOMEM. */
static int replace_set(struct ck_managed_entry *e, json_t *set)
{
    if (!set)
        return CK_ENOMEM;
    json_decref(e->set);
    e->set = set;
    return 0;
}

/* Takes changed and removed from every entry but skip (-1: none). */
static int disown(struct ck_managed_fields *mf, ssize_t skip, const json_t *changed,
                  const json_t *removed)
{
    for (size_t i = 0; i < mf->n; i++) {
        if ((ssize_t)i == skip)
            continue;
        json_t *a = ck_fieldset_difference(mf->entries[i].set, changed);
        json_t *b = a ? ck_fieldset_difference(a, removed) : NULL;
        json_decref(a);
        if (replace_set(&mf->entries[i], b) < 0)
            return CK_ENOMEM;
    }
    return 0;
}

static int set_time(struct ck_managed_entry *e, long long now)
{
    char buf[32];
    char *t = ck__strdup(ck_rfc3339(now, buf, sizeof(buf)));
    if (!t)
        return CK_ENOMEM;
    free(e->time);
    e->time = t;
    return 0;
}

/* Merges the oldest Update managers into "ancient-changes" beyond CK_MAX_UPDATE_MANAGERS. */
static int cap_update_managers(struct ck_managed_fields *mf)
{
    for (;;) {
        size_t updaters = 0;
        ssize_t oldest = -1, second = -1;
        for (size_t i = 0; i < mf->n; i++) {
            struct ck_managed_entry *e = &mf->entries[i];
            if (strcmp(e->operation, "Update") != 0 || ck_fieldset_is_empty(e->set))
                continue;
            updaters++;
            const char *ti = e->time ? e->time : "";
            if (oldest < 0 ||
                strcmp(ti, mf->entries[oldest].time ? mf->entries[oldest].time : "") < 0) {
                second = oldest;
                oldest = (ssize_t)i;
            } else if (second < 0 ||
                       strcmp(ti, mf->entries[second].time ? mf->entries[second].time : "") < 0) {
                second = (ssize_t)i;
            }
        }
        if (updaters <= CK_MAX_UPDATE_MANAGERS || oldest < 0 || second < 0)
            return 0;
        /* the two oldest become one bucket with the newer one's time */
        struct ck_managed_entry *a = &mf->entries[oldest], *b = &mf->entries[second];
        json_t *u = ck_fieldset_union(a->set, b->set);
        char *name = ck__strdup("ancient-changes");
        if (!u || !name) {
            json_decref(u);
            free(name);
            return CK_ENOMEM;
        }
        free(b->manager);
        b->manager = name;
        replace_set(b, u);
        json_decref(a->set);
        a->set = json_object(); /* empty: left out when encoded */
        if (!a->set)
            return CK_ENOMEM;
    }
}

/* The entries of obj (NULL when obj has none or they are malformed: then empty). */
static int decode_entries(const json_t *obj, struct ck_managed_fields *mf)
{
    struct ck_err err = {0};
    int r = ck_managed_fields_decode(
        json_object_get(json_object_get(obj, "metadata"), "managedFields"), mf, &err);
    ck_err_release(&err);
    return r == CK_ENOMEM ? CK_ENOMEM : 0;
}

static int store_entries(json_t *obj, struct ck_managed_fields *mf)
{
    json_t *meta = ck__object_at(obj, "metadata");
    json_t *list = ck_managed_fields_encode(mf);
    if (!meta || !list) {
        json_decref(list);
        return CK_ENOMEM;
    }
    if (json_array_size(list) == 0) {
        json_decref(list);
        json_object_del(meta, "managedFields");
        return 0;
    }
    return json_object_set_new(meta, "managedFields", list) < 0 ? CK_ENOMEM : 0;
}

/* Update's bookkeeping on mf for who writing old -> obj. */
static int record_update(struct walk *w, const struct ck_kind *kind, const json_t *old,
                         const json_t *obj, struct ck_managed_fields *mf,
                         const struct ck_field_manager *who)
{
    json_t *changed = NULL, *removed = NULL;
    json_t *empty = old ? NULL : json_object();
    int r = compare_objects(w, kind, old ? old : empty, obj, who->subresource, &changed, &removed);
    json_decref(empty);
    if (r < 0)
        return r;
    char *version = api_version_of(kind);
    bool nothing = ck_fieldset_is_empty(changed) && ck_fieldset_is_empty(removed);
    r = !version ? CK_ENOMEM : nothing ? 0 : disown(mf, -1, changed, removed);
    if (r == 0 && !ck_fieldset_is_empty(changed)) {
        ssize_t i = ck_managed_fields_find(mf, who->manager, "Update", version, sub_or_empty(who));
        if (i < 0) {
            /* fieldsets are never changed in place: the entry shares changed */
            r = ck_managed_fields_add(mf, who->manager, "Update", version, NULL, sub_or_empty(who),
                                      json_incref(changed));
            i = (ssize_t)mf->n - 1;
        } else {
            r = replace_set(&mf->entries[i], ck_fieldset_union(mf->entries[i].set, changed));
        }
        if (r == 0)
            r = set_time(&mf->entries[i], who->now);
    }
    if (r == 0)
        r = cap_update_managers(mf);
    free(version);
    json_decref(changed);
    json_decref(removed);
    return r;
}

/* [] or [{}]: the client resets managedFields. */
static bool is_reset(const json_t *requested)
{
    return json_is_array(requested) &&
           (json_array_size(requested) == 0 ||
            (json_array_size(requested) == 1 && json_is_object(json_array_get(requested, 0)) &&
             json_object_size(json_array_get(requested, 0)) == 0));
}

int ck_managed_fields_track_update(const struct ck_schemas *set, const struct ck_kind *kind,
                                   const json_t *old, json_t *obj, const json_t *requested,
                                   const struct ck_field_manager *who)
{
    struct ck_err err = {0};
    struct walk w = {set, &err, 0};
    struct ck_managed_fields mf = {0};
    bool subresource = who->subresource && who->subresource[0];
    int r = 0;
    if (!subresource && is_reset(requested)) {
        r = 0; /* reset: start from nothing */
    } else {
        struct ck_err derr = {0};
        int d =
            subresource || !requested ? CK_EINVAL : ck_managed_fields_decode(requested, &mf, &derr);
        ck_err_release(&derr);
        if (d == CK_ENOMEM)
            r = CK_ENOMEM;
        else if (d < 0 || mf.n == 0) {
            ck_managed_fields_release(&mf);
            r = old ? decode_entries(old, &mf) : 0;
        }
    }
    if (r == 0)
        r = record_update(&w, kind, old, obj, &mf, who);
    if (r == 0)
        r = store_entries(obj, &mf);
    ck_managed_fields_release(&mf);
    ck_err_release(&err);
    return r < 0 ? CK_ENOMEM : 0;
}

/* ---- apply ----------------------------------------------------------------------- */

struct conflict {
    const struct ck_managed_entry *entry;
    char *path;
};

struct conflicts {
    struct conflict *items;
    size_t n;
    const struct ck_managed_entry *entry; /* the entry being walked */
    bool nomem;
};

static int collect_conflict(const char *const *path, size_t n, void *arg)
{
    struct conflicts *c = arg;
    char *p = ck_fieldpath_string(path, n);
    struct conflict *grown = p ? ck__realloc(c->items, (c->n + 1) * sizeof(*c->items)) : NULL;
    if (!grown) {
        free(p);
        c->nomem = true;
        return CK_ENOMEM;
    }
    c->items = grown;
    c->items[c->n].entry = c->entry;
    c->items[c->n].path = p;
    c->n++;
    return 0;
}

static void conflicts_release(struct conflicts *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->items[i].path);
    free(c->items);
}

/* How kube-apiserver names a manager in a conflict: "m" [with subresource "s"] [using v]. */
static char *manager_text(const struct ck_managed_entry *e)
{
    char *s = NULL;
    int r;
    char sub[300] = "";
    if (e->subresource[0])
        snprintf(sub, sizeof(sub), " with subresource \"%s\"", e->subresource);
    if (strcmp(e->operation, "Update") == 0)
        r = asprintf(&s, "\"%s\"%s using %s", e->manager, sub, e->api_version);
    else
        r = asprintf(&s, "\"%s\"%s", e->manager, sub);
    return r < 0 ? NULL : s;
}

static int compare_conflicts(const void *pa, const void *pb)
{
    const struct conflict *a = pa, *b = pb;
    /* by manager identifier, then in the order the sets were walked */
    int c = strcmp(a->entry->manager, b->entry->manager);
    if (!c)
        c = strcmp(a->entry->operation, b->entry->operation);
    if (!c)
        c = strcmp(a->entry->subresource, b->entry->subresource);
    return c ? c : (a < b ? -1 : a > b);
}

/* 409 Conflict worded as fieldmanager's NewConflictError, one cause per field. */
static int conflict_error(struct ck_err *reterr, struct conflicts *c)
{
    qsort(c->items, c->n, sizeof(*c->items), compare_conflicts);
    struct ck__buf b = {0};
    if (c->n == 1) {
        char *m = manager_text(c->items[0].entry);
        ck__buf_printf(&b, "Apply failed with 1 conflict: conflict with %s: %s", m ? m : "",
                       c->items[0].path);
        free(m);
    } else {
        ck__buf_printf(&b, "Apply failed with %zu conflicts: ", c->n);
        for (size_t i = 0; i < c->n; i++) {
            if (i == 0 || c->items[i].entry != c->items[i - 1].entry) {
                char *m = manager_text(c->items[i].entry);
                ck__buf_printf(&b, "%sconflicts with %s:", i ? "\n" : "", m ? m : "");
                free(m);
            }
            ck__buf_printf(&b, "\n- %s", c->items[i].path);
        }
    }
    char *msg = ck__buf_take(&b);
    if (!msg)
        return ck_err_no_memory(reterr);
    int code = ck_err_status(reterr, "Conflict", "%s", msg);
    free(msg);
    for (size_t i = 0; i < c->n; i++) {
        char *m = manager_text(c->items[i].entry);
        char *cause = NULL;
        if (!m || asprintf(&cause, "conflict with %s", m) < 0)
            cause = NULL;
        free(m);
        int r = cause ? ck_err_add_cause(reterr, "FieldManagerConflict", cause, c->items[i].path)
                      : CK_ENOMEM;
        free(cause);
        if (r < 0)
            return ck_err_no_memory(reterr);
    }
    return code;
}

/*
 * The fields the client-side last-applied annotation of live describes whose
 * live value is still the annotation's: *ret (NULL when there is no usable
 * annotation). 0 or CK_ENOMEM.
 */
static int last_applied_fields(struct walk *w, const struct ck_kind *kind, const json_t *live,
                               json_t **ret)
{
    *ret = NULL;
    const char *text = json_string_value(
        json_object_get(json_object_get(json_object_get(live, "metadata"), "annotations"),
                        last_applied_annotation));
    json_t *doc = NULL;
    if (text && ck_json_loadb(text, strlen(text), 0, &doc, NULL) == CK_ENOMEM)
        return CK_ENOMEM;
    char *version = json_is_object(doc) ? api_version_of(kind) : NULL;
    const char *doc_version = json_string_value(json_object_get(doc, "apiVersion"));
    if (json_is_object(doc) && !version) {
        json_decref(doc);
        return CK_ENOMEM;
    }
    bool usable = version && doc_version && strcmp(version, doc_version) == 0;
    free(version);
    if (!usable) {
        json_decref(doc);
        return 0;
    }
    struct ck_err err = {0};
    struct walk quiet = {w->set, &err, 0};
    json_t *s = json_object(), *changed = json_object(), *removed = json_object();
    if (s && changed && removed) {
        fieldset_of(&quiet, root_prop(w->set, kind), doc, s, 0);
        compare_children(&quiet, root_prop(w->set, kind), doc, live, changed, removed, 1);
    } else {
        quiet.failed = CK_ENOMEM;
    }
    /* only fields whose live value is still the annotation's are the applier's */
    json_t *a = quiet.failed ? NULL : ck_fieldset_difference(s, changed);
    json_t *allowed = a ? ck_fieldset_difference(a, removed) : NULL;
    if (!quiet.failed && !allowed)
        quiet.failed = CK_ENOMEM;
    json_decref(a);
    json_decref(s);
    json_decref(changed);
    json_decref(removed);
    ck_err_release(&err);
    json_decref(doc);
    if (quiet.failed) { /* an annotation we cannot read allows nothing */
        json_decref(allowed);
        return quiet.failed == CK_ENOMEM ? CK_ENOMEM : 0;
    }
    *ret = allowed;
    return 0;
}

/* The last-applied annotation kubectl's server-side apply keeps in step: config, compact. */
static int update_last_applied(json_t *obj, const json_t *config)
{
    json_t *copy = ck__json_copy(config);
    json_t *ann = copy ? json_object_get(json_object_get(copy, "metadata"), "annotations") : NULL;
    if (ann)
        json_object_del(ann, last_applied_annotation);
    char *text = copy ? ck__json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS, NULL) : NULL;
    json_decref(copy);
    char *line = NULL;
    if (!text || asprintf(&line, "%s\n", text) < 0)
        line = NULL;
    free(text);
    json_t *annotations =
        line ? ck__object_at(ck__object_at(obj, "metadata"), "annotations") : NULL;
    int r = annotations && json_object_set_new(annotations, last_applied_annotation,
                                               json_string(line)) == 0
                ? 0
                : CK_ENOMEM;
    free(line);
    return r;
}

/* Takes from each entry's conflicts what the last-applied annotation allows. 0 or CK_ENOMEM. */
static int drop_allowed(struct walk *w, const struct ck_kind *kind, const json_t *live,
                        json_t **conflict_sets, size_t n)
{
    json_t *allowed = NULL;
    int r = last_applied_fields(w, kind, live, &allowed);
    for (size_t i = 0; r == 0 && allowed && i < n; i++) {
        if (!conflict_sets[i])
            continue;
        json_t *left = ck_fieldset_difference(conflict_sets[i], allowed);
        if (!left)
            r = CK_ENOMEM;
        else
            json_decref(conflict_sets[i]), conflict_sets[i] = left;
    }
    json_decref(allowed);
    return r;
}

static bool has_last_applied(const json_t *live)
{
    return json_object_get(json_object_get(json_object_get(live, "metadata"), "annotations"),
                           last_applied_annotation) != NULL;
}

/* A copy of obj without metadata.managedFields. */
static json_t *without_managed_fields(const json_t *obj)
{
    json_t *copy = ck__json_copy(obj);
    json_t *meta = copy ? json_object_get(copy, "metadata") : NULL;
    if (meta)
        json_object_del(meta, "managedFields");
    return copy;
}

int ck_apply(const struct ck_schemas *set, const struct ck_kind *kind, const json_t *live,
             const json_t *config, const struct ck_field_manager *who, bool force, json_t **ret_obj,
             struct ck_err *reterr)
{
    struct walk w = {set, reterr, 0};
    struct ck_managed_fields mf = {0};
    json_t *base = live ? without_managed_fields(live) : json_object();
    json_t *cfg = without_managed_fields(config);
    json_t *merged = NULL, *applied = NULL, *changed = NULL, *removed = NULL;
    json_t **conflict_sets = NULL;
    size_t n_conflict_sets = 0; /* entries there are before who's own is added */
    char *version = api_version_of(kind);
    int r = 0;
    if (!base || !cfg || !version || (live && decode_entries(live, &mf) < 0)) {
        r = ck_err_no_memory(reterr);
        goto out;
    }
    /* objects written before managedFields existed: what they hold was set before */
    if (live && mf.n == 0) {
        struct ck_field_manager before = {"before-first-apply", who->subresource, who->now};
        r = record_update(&w, kind, NULL, base, &mf, &before);
        if (r < 0)
            goto out_failed;
    }
    ssize_t self = ck_managed_fields_find(&mf, who->manager, "Apply", version, sub_or_empty(who));
    json_t *last = self >= 0 ? json_incref(mf.entries[self].set) : NULL;

    merged = merge(&w, root_prop(set, kind), base, cfg, 0);
    applied = json_object();
    if (!merged || !applied) {
        json_decref(last);
        nomem(&w);
        goto out_failed;
    }
    fieldset_of(&w, root_prop(set, kind), cfg, applied, 0);
    strip(applied, kind, who->subresource);
    if (w.failed) {
        json_decref(last);
        goto out_failed;
    }
    /* prune: what who applied last time and no longer does, unless another manager owns it */
    if (last) {
        json_t *owned = ck__json_copy(applied);
        for (size_t i = 0; owned && i < mf.n; i++) {
            if ((ssize_t)i == self)
                continue;
            json_t *u = ck_fieldset_union(owned, mf.entries[i].set);
            json_decref(owned);
            owned = u;
        }
        json_t *gone = owned ? ck_fieldset_difference(last, owned) : NULL;
        if (gone)
            remove_items(&w, root_prop(set, kind), merged, gone, owned, 0);
        else
            nomem(&w);
        json_decref(gone);
        json_decref(owned);
    }
    json_decref(last);
    if (w.failed ||
        compare_objects(&w, kind, base, merged, who->subresource, &changed, &removed) < 0)
        goto out_failed;

    /* conflicts: fields other managers own that this apply changes */
    conflict_sets = ck__calloc(mf.n ? mf.n : 1, sizeof(*conflict_sets));
    if (!conflict_sets) {
        nomem(&w);
        goto out_failed;
    }
    n_conflict_sets = mf.n;
    bool any = false;
    for (size_t i = 0; i < mf.n; i++) {
        if ((ssize_t)i == self)
            continue;
        conflict_sets[i] = ck_fieldset_intersection(mf.entries[i].set, changed);
        if (!conflict_sets[i]) {
            nomem(&w);
            goto out_failed;
        }
        any |= !ck_fieldset_is_empty(conflict_sets[i]);
    }
    if (any && !force && strcmp(who->manager, "kubectl") == 0 && live && has_last_applied(live)) {
        /* the upgrade from client-side apply: what the annotation describes is forced */
        if (drop_allowed(&w, kind, live, conflict_sets, n_conflict_sets) < 0) {
            nomem(&w);
            goto out_failed;
        }
        any = false;
        for (size_t i = 0; i < mf.n; i++)
            any |= conflict_sets[i] && !ck_fieldset_is_empty(conflict_sets[i]);
        force = !any;
    }
    if (any && !force) {
        struct conflicts c = {0};
        for (size_t i = 0; i < mf.n && !c.nomem; i++) {
            c.entry = &mf.entries[i];
            if (conflict_sets[i])
                ck_fieldset_walk(conflict_sets[i], collect_conflict, &c);
        }
        r = c.nomem ? ck_err_no_memory(reterr) : conflict_error(reterr, &c);
        if (r == CK_EINVAL || r == CK_ECONFLICT)
            r = CK_ECONFLICT;
        conflicts_release(&c);
        goto out;
    }
    if (disown(&mf, self, changed, removed) < 0) {
        nomem(&w);
        goto out_failed;
    }
    bool noop = live && json_equal(base, merged);
    if (self < 0) {
        r = ck_managed_fields_add(&mf, who->manager, "Apply", version, NULL, sub_or_empty(who),
                                  json_incref(applied));
        self = (ssize_t)mf.n - 1;
        if (r == 0)
            r = set_time(&mf.entries[self], who->now);
    } else {
        struct ck_managed_entry *e = &mf.entries[self];
        char *v = ck__strdup(version);
        if (v) {
            free(e->api_version);
            e->api_version = v;
        }
        r = v ? replace_set(e, json_incref(applied)) : CK_ENOMEM;
        if (r == 0 && !noop)
            r = set_time(e, who->now);
    }
    if (r == 0)
        r = cap_update_managers(&mf);
    if (r == 0 && strcmp(who->manager, "kubectl") == 0 && live && has_last_applied(live))
        r = update_last_applied(merged, config);
    if (r == 0)
        r = store_entries(merged, &mf);
    if (r < 0) {
        r = ck_err_no_memory(reterr);
        goto out;
    }
    *ret_obj = merged;
    merged = NULL;
    goto out;

out_failed:
    r = w.failed ? w.failed : ck_err_no_memory(reterr);
out:
    for (size_t i = 0; i < n_conflict_sets; i++)
        json_decref(conflict_sets[i]);
    free(conflict_sets);
    ck_managed_fields_release(&mf);
    json_decref(base);
    json_decref(cfg);
    json_decref(merged);
    json_decref(applied);
    json_decref(changed);
    json_decref(removed);
    free(version);
    return r;
}
