/*
 * patch.c - the three patch formats of the Kubernetes API.
 *
 *   merge      RFC 7386: kubectl label, annotate, scale, patch --type merge.
 *   json       RFC 6902: kubectl patch --type json and rollout undo.
 *   strategic  Kubernetes' strategic merge patch: kubectl apply, edit,
 *              set image, rollout restart, and every dict body of the Python
 *              client. It is a merge patch whose lists merge per element on
 *              the merge key the schema names (containers by name, ports by
 *              containerPort, conditions by type, ...), plus directives:
 *                "$patch": "delete" | "replace" | "merge"
 *                "$setElementOrder/<list>": [...]
 *                "$deleteFromPrimitiveList/<list>": [...]
 *                "$retainKeys": [...]
 *              (k8s.io/apimachinery/pkg/util/strategicpatch).
 *
 * Every function works on a deep copy and leaves its inputs alone, so a
 * failed patch changes nothing.
 *
 * Limits (struct ck_patch_limits, docs/limits.md): a JSON patch is refused
 * before any work when it has more operations than kube-apiserver's 10,000,
 * and fails at the copy that takes the summed size of copied values past
 * 3 MiB (the two ways a small JSON patch can grow a document; add and replace
 * only insert what the body carries, move only moves). Merge patches cannot
 * grow a document beyond target plus patch; strategic merge can cost time
 * quadratic in list lengths, so it counts element comparisons and stops past
 * a budget. The size of the result is the caller's to bound (the API server
 * checks the patched object against the request body limit).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"
#include "internal.h"

#define MAX_DEPTH 64

const struct ck_patch_limits ck_patch_default_limits = {
    .max_operations = 10000,              /* kube-apiserver's maxJSONPatchOperations */
    .max_copy_bytes = 3u * 1024 * 1024,   /* kube-apiserver's JSONPatchMaxCopyBytes */
    .max_comparisons = 20u * 1000 * 1000, /* well under a second of merging */
};

/*
 * The size of v written as compact JSON (strings counted without escapes),
 * counting stops as soon as it passes limit: the cost is bounded by limit, not
 * by v.
 */
static size_t json_size_upto(const json_t *v, size_t limit)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        size_t n = 2;
        const char *key;
        json_t *member;
        json_object_foreach((json_t *)v, key, member)
        {
            n += strlen(key) + 4;
            if (n > limit)
                return n;
            n += json_size_upto(member, limit - n);
            if (n > limit)
                return n;
        }
        return n;
    }
    case JSON_ARRAY: {
        size_t n = 2, i;
        json_t *item;
        json_array_foreach(v, i, item)
        {
            n += 1 + json_size_upto(item, limit - n);
            if (n > limit)
                return n;
        }
        return n;
    }
    case JSON_STRING:
        return json_string_length(v) + 2;
    case JSON_INTEGER:
    case JSON_REAL:
        return 8; /* a typical number; no number is larger than 24 */
    case JSON_TRUE:
    case JSON_NULL:
        return 4;
    case JSON_FALSE:
        return 5;
    }
    return 0;
}

/* ---- RFC 7386 ----------------------------------------------------------- */

/*
 * Merges patch into target (consumed, and changed in place: it must share nothing with
 * anyone). Returns the result, or NULL when out of memory. What it takes from patch is
 * copied, so the result shares nothing with patch either.
 */
static json_t *merge_into(json_t *target, const json_t *patch, int depth)
{
    if (!json_is_object(patch) || depth > MAX_DEPTH) {
        json_decref(target);
        return ck__json_copy(patch);
    }
    if (!json_is_object(target)) {
        json_decref(target);
        target = json_object();
        if (!target)
            return NULL;
    }
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)patch, key, value)
    {
        if (json_is_null(value)) {
            json_object_del(target, key);
            continue;
        }
        /* target is ck_merge_patch()'s copy: its members are merged in place */
        json_t *merged = merge_into(json_incref(json_object_get(target, key)), value, depth + 1);
        /* json_object_set_new frees merged when it fails */
        if (!merged || json_object_set_new(target, key, merged) < 0) {
            json_decref(target);
            return NULL;
        }
    }
    return target;
}

json_t *ck_merge_patch(const json_t *target, const json_t *patch)
{
    json_t *copy = target ? ck__json_copy(target) : NULL;
    if (target && !copy)
        return NULL;
    return merge_into(copy, patch, 0);
}

/* ---- RFC 6902 ----------------------------------------------------------- */

/* Decodes one JSON pointer token (~1 is '/', ~0 is '~') into buf. */
static bool pointer_token(const char *start, size_t len, char *buf, size_t size)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (n + 1 >= size)
            return false;
        if (start[i] == '~') {
            if (i + 1 >= len || (start[i + 1] != '0' && start[i + 1] != '1'))
                return false;
            buf[n++] = start[i + 1] == '0' ? '~' : '/';
            i++;
        } else {
            buf[n++] = start[i];
        }
    }
    buf[n] = '\0';
    return true;
}

/* Parses an array index token; "-" is len (append) when allow_end. */
static bool array_index(const char *token, size_t len, bool allow_end, size_t *ret)
{
    if (allow_end && strcmp(token, "-") == 0) {
        *ret = len;
        return true;
    }
    if (!*token || (token[0] == '0' && token[1]))
        return false;
    size_t v = 0;
    for (const char *p = token; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (size_t)(*p - '0');
        if (v > len + 1)
            return false;
    }
    if (v > len || (v == len && !allow_end))
        return false;
    *ret = v;
    return true;
}

/*
 * Resolves pointer's parent container in doc and its last token. Returns
 * false when the parent does not exist or the pointer is malformed. The
 * root pointer "" has no parent: *ret_parent is NULL.
 */
static bool pointer_parent(json_t *doc, const char *pointer, json_t **ret_parent, char *last,
                           size_t last_size)
{
    if (*pointer == '\0') {
        *ret_parent = NULL;
        return true;
    }
    if (*pointer != '/')
        return false;
    json_t *cur = doc;
    const char *p = pointer + 1;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        char token[512];
        if (!pointer_token(p, len, token, sizeof(token)))
            return false;
        if (!slash) {
            snprintf(last, last_size, "%s", token);
            *ret_parent = cur;
            return true;
        }
        if (json_is_object(cur)) {
            cur = json_object_get(cur, token);
        } else if (json_is_array(cur)) {
            size_t index;
            if (!array_index(token, json_array_size(cur), false, &index))
                return false;
            cur = json_array_get(cur, index);
        } else {
            return false;
        }
        if (!cur)
            return false;
        p = slash + 1;
    }
}

/* The value at pointer (borrowed), or NULL. */
static json_t *pointer_get(json_t *doc, const char *pointer)
{
    json_t *parent;
    char last[512];
    if (!pointer_parent(doc, pointer, &parent, last, sizeof(last)))
        return NULL;
    if (!parent)
        return doc;
    if (json_is_object(parent))
        return json_object_get(parent, last);
    size_t index;
    if (json_is_array(parent) && array_index(last, json_array_size(parent), false, &index))
        return json_array_get(parent, index);
    return NULL;
}

/*
 * add: value is stolen (NULL: a copy that could not be made). *doc may be
 * replaced (root). Returns 0, CK_EINVAL when the place does not exist, or
 * CK_ENOMEM.
 */
static int pointer_add(json_t **doc, const char *pointer, json_t *value)
{
    json_t *parent;
    char last[512];
    if (!value)
        return CK_ENOMEM;
    if (!pointer_parent(*doc, pointer, &parent, last, sizeof(last))) {
        json_decref(value);
        return CK_EINVAL;
    }
    if (!parent) {
        json_decref(*doc);
        *doc = value;
        return 0;
    }
    /* the setters fail on a good place only when out of memory */
    if (json_is_object(parent))
        return json_object_set_new(parent, last, value) < 0 ? CK_ENOMEM : 0;
    size_t index;
    if (json_is_array(parent) && array_index(last, json_array_size(parent), true, &index))
        return json_array_insert_new(parent, index, value) < 0 ? CK_ENOMEM : 0;
    json_decref(value);
    return CK_EINVAL;
}

static bool pointer_remove(json_t *doc, const char *pointer)
{
    json_t *parent;
    char last[512];
    if (!pointer_parent(doc, pointer, &parent, last, sizeof(last)) || !parent)
        return false;
    if (json_is_object(parent))
        return json_object_del(parent, last) == 0;
    size_t index;
    if (json_is_array(parent) && array_index(last, json_array_size(parent), false, &index))
        return json_array_remove(parent, index) == 0;
    return false;
}

int ck_json_patch(const json_t *doc, const json_t *operations, json_t **ret_doc,
                  struct ck_err *reterr)
{
    return ck_json_patch_bounded(doc, operations, &ck_patch_default_limits, ret_doc, reterr);
}

int ck_json_patch_bounded(const json_t *doc, const json_t *operations,
                          const struct ck_patch_limits *limits, json_t **ret_doc,
                          struct ck_err *reterr)
{
    if (!json_is_array(operations))
        return ck_err_set(reterr, CK_EINVAL, "a JSON patch must be an array of operations");
    size_t n_ops = json_array_size(operations);
    if (limits->max_operations && n_ops > limits->max_operations)
        return ck_err_status(
            reterr, "RequestEntityTooLarge",
            "Request entity too large: The allowed maximum operations in a JSON patch is %zu, "
            "got %zu",
            limits->max_operations, n_ops);
    size_t copied = 0; /* summed size of the values copy operations duplicated */
    json_t *result = ck__json_copy(doc);
    if (!result)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    size_t i;
    json_t *op;
    json_array_foreach(operations, i, op)
    {
        const char *name = json_string_value(json_object_get(op, "op"));
        const char *path = json_string_value(json_object_get(op, "path"));
        const char *from = json_string_value(json_object_get(op, "from"));
        json_t *value = json_object_get(op, "value");
        bool ok = false;
        int added = 0;
        if (!name || !path) {
            json_decref(result);
            return ck_err_set(reterr, CK_EINVAL, "operation %zu: needs \"op\" and \"path\"", i);
        }
        if (strcmp(name, "add") == 0) {
            ok = value && (added = pointer_add(&result, path, ck__json_copy(value))) == 0;
        } else if (strcmp(name, "remove") == 0) {
            ok = pointer_remove(result, path);
        } else if (strcmp(name, "replace") == 0) {
            ok = value && pointer_get(result, path) &&
                 (*path == '\0' || pointer_remove(result, path)) &&
                 (added = pointer_add(&result, path, ck__json_copy(value))) == 0;
        } else if (strcmp(name, "move") == 0 || strcmp(name, "copy") == 0) {
            bool move = name[0] == 'm';
            size_t from_len = from ? strlen(from) : 0;
            json_t *source = from ? pointer_get(result, from) : NULL;
            if (source && !move && limits->max_copy_bytes) {
                size_t left = limits->max_copy_bytes - copied;
                copied += json_size_upto(source, left);
                if (copied > limits->max_copy_bytes) {
                    json_decref(result);
                    return ck_err_status(reterr, "Invalid",
                                         "Unable to complete the copy, the accumulated size "
                                         "increase of copy is %zu, exceeding the limit %zu",
                                         copied, limits->max_copy_bytes);
                }
            }
            /* a value cannot move into one of its own children */
            bool into_child =
                move && from && strncmp(path, from, from_len) == 0 && path[from_len] == '/';
            json_t *copy = source && !into_child ? ck__json_copy(source) : NULL;
            if (source && !into_child && !copy)
                added = CK_ENOMEM;
            else if (copy && move && !pointer_remove(result, from))
                copy = (json_decref(copy), NULL);
            ok = copy && (added = pointer_add(&result, path, copy)) == 0;
        } else if (strcmp(name, "test") == 0) {
            json_t *have = pointer_get(result, path);
            ok = value && have && json_equal(have, value);
            if (!ok) {
                json_decref(result);
                return ck_err_set(reterr, CK_EINVAL, "testing value %s failed", path);
            }
        } else {
            json_decref(result);
            return ck_err_set(reterr, CK_EINVAL, "operation %zu: unknown op \"%s\"", i, name);
        }
        if (!ok && added == CK_ENOMEM) {
            json_decref(result);
            return ck_err_set(reterr, CK_ENOMEM, "out of memory");
        }
        if (!ok) {
            json_decref(result);
            return ck_err_set(
                reterr, CK_EINVAL, "%s operation does not apply: doc is missing path: \"%s\"", name,
                strcmp(name, "move") == 0 || strcmp(name, "copy") == 0 ? (from ? from : "") : path);
        }
    }
    *ret_doc = result;
    return 0;
}

/* ---- strategic merge patch --------------------------------------------- */

struct smp {
    const struct ck_schemas *set;
    struct ck_err *err;
    int failed;
    size_t comparisons;     /* element comparisons so far */
    size_t max_comparisons; /* 0: no limit */
};

static int smp_fail(struct smp *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int smp_fail(struct smp *s, const char *fmt, ...)
{
    if (!s->failed) {
        char msg[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        s->failed = CK_EINVAL;
        ck_err_set(s->err, CK_EINVAL, "%s", msg);
    }
    return CK_EINVAL;
}

/*
 * Counts n element comparisons about to be made; false (the patch has failed
 * with 413) when they would take the patch past its budget.
 */
static bool smp_work(struct smp *s, size_t n)
{
    if (s->failed)
        return false;
    s->comparisons += n;
    if (!s->max_comparisons || s->comparisons <= s->max_comparisons)
        return true;
    s->failed = ck_err_status(s->err, "RequestEntityTooLarge",
                              "Request entity too large: the patch needs more than %zu list "
                              "element comparisons to apply",
                              s->max_comparisons);
    return false;
}

/* Records running out of memory (the first failure is the answer); returns CK_ENOMEM. */
static int smp_nomem(struct smp *s)
{
    if (!s->failed)
        s->failed = ck_err_set(s->err, CK_ENOMEM, "out of memory");
    return CK_ENOMEM;
}

/* The schema of a member of an object schema (properties, else additionalProperties). */
static const json_t *member_schema(const struct smp *s, const json_t *schema, const char *key)
{
    const json_t *resolved = ck__schema_resolve(s->set, schema);
    const json_t *prop = json_object_get(json_object_get(resolved, "properties"), key);
    if (prop)
        return prop;
    const json_t *extra = json_object_get(resolved, "additionalProperties");
    return json_is_object(extra) ? extra : NULL;
}

/* A property's patch strategy and merge key, read from its schema (or its wrapper). */
static void list_strategy(const struct smp *s, const json_t *prop, bool *merge,
                          const char **merge_key)
{
    *merge = false;
    *merge_key = NULL;
    const json_t *resolved = ck__schema_resolve(s->set, prop);
    const char *strategy = json_string_value(json_object_get(prop, "x-kubernetes-patch-strategy"));
    if (!strategy)
        strategy = json_string_value(json_object_get(resolved, "x-kubernetes-patch-strategy"));
    const char *key = json_string_value(json_object_get(prop, "x-kubernetes-patch-merge-key"));
    if (!key)
        key = json_string_value(json_object_get(resolved, "x-kubernetes-patch-merge-key"));
    *merge = strategy && strstr(strategy, "merge") != NULL; /* "merge" or "merge,retainKeys" */
    *merge_key = key;
}

static bool is_directive(const char *key)
{
    return key[0] == '$';
}

/*
 * A copy of a patch value with every directive removed (for appended
 * elements), or NULL when out of memory.
 */
static json_t *strip_directives(const json_t *v)
{
    if (json_is_array(v)) {
        json_t *out = json_array();
        size_t i;
        json_t *item;
        json_array_foreach(v, i, item)
        {
            if (!out || json_array_append_new(out, strip_directives(item)) < 0)
                return json_decref(out), NULL;
        }
        return out;
    }
    if (!json_is_object(v))
        return ck__json_copy(v);
    json_t *out = json_object();
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)v, key, value)
    {
        if (!out ||
            (!is_directive(key) && json_object_set_new(out, key, strip_directives(value)) < 0))
            return json_decref(out), NULL;
    }
    return out;
}

static json_t *smp_merge_map(struct smp *s, json_t *original, const json_t *patch,
                             const json_t *schema, int depth);

/* Finds the element of list whose merge key equals key_value. */
static ssize_t find_by_key(const json_t *list, const char *merge_key, const json_t *key_value)
{
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item)
    {
        json_t *v = json_object_get(item, merge_key);
        if (v && json_equal(v, (json_t *)key_value))
            return (ssize_t)i;
    }
    return -1;
}

/* Merges a patch list into original (consumed) element by element on merge_key. */
static json_t *merge_keyed_list(struct smp *s, json_t *original, const json_t *patch,
                                const char *merge_key, const json_t *item_schema, int depth)
{
    if (!json_is_array(original)) {
        json_decref(original);
        original = json_array();
        if (!original) {
            smp_nomem(s);
            return NULL;
        }
    }
    /* [{"$patch": "replace"}, ...]: the list becomes the other elements */
    size_t i;
    json_t *pe;
    json_array_foreach(patch, i, pe)
    {
        const char *directive = json_string_value(json_object_get(pe, "$patch"));
        if (directive && strcmp(directive, "replace") == 0 && !json_object_get(pe, merge_key)) {
            json_t *out = json_array();
            size_t j;
            json_t *other;
            json_array_foreach(patch, j, other)
            {
                if (!out || (j != i && json_array_append_new(out, strip_directives(other)) < 0)) {
                    smp_nomem(s);
                    break;
                }
            }
            json_decref(original);
            return out;
        }
    }
    json_array_foreach(patch, i, pe)
    {
        if (!json_is_object(pe)) {
            smp_fail(s, "elements of a merge list must be objects (merge key %s)", merge_key);
            return original;
        }
        const json_t *key_value = json_object_get(pe, merge_key);
        const char *directive = json_string_value(json_object_get(pe, "$patch"));
        if (!key_value) {
            smp_fail(s, "an element of a merge list has no merge key %s", merge_key);
            return original;
        }
        if (!smp_work(s, json_array_size(original)))
            return original;
        ssize_t at = find_by_key(original, merge_key, key_value);
        if (directive && strcmp(directive, "delete") == 0) {
            while (at >= 0) {
                json_array_remove(original, (size_t)at);
                if (!smp_work(s, json_array_size(original)))
                    return original;
                at = find_by_key(original, merge_key, key_value);
            }
            continue;
        }
        if (at >= 0) {
            json_t *merged = smp_merge_map(s, json_incref(json_array_get(original, (size_t)at)), pe,
                                           item_schema, depth + 1);
            if (s->failed) {
                json_decref(merged);
                return original;
            }
            if (json_array_set_new(original, (size_t)at, merged) < 0) {
                smp_nomem(s);
                return original;
            }
        } else if (json_array_append_new(original, strip_directives(pe)) < 0) {
            smp_nomem(s);
            return original;
        }
    }
    return original;
}

/* Lists of scalars with strategy merge are sets: the union, original order first. */
static json_t *merge_primitive_list(struct smp *s, json_t *original, const json_t *patch)
{
    if (!json_is_array(original)) {
        json_decref(original);
        original = json_array();
        if (!original) {
            smp_nomem(s);
            return NULL;
        }
    }
    size_t i;
    json_t *pe;
    json_array_foreach(patch, i, pe)
    {
        if (!smp_work(s, json_array_size(original)))
            return original;
        bool present = false;
        size_t j;
        json_t *oe;
        json_array_foreach(original, j, oe)
        {
            present = present || json_equal(oe, pe);
        }
        if (!present && json_array_append(original, pe) < 0) {
            smp_nomem(s);
            break;
        }
    }
    return original;
}

/* Applies $setElementOrder/<list>: listed elements first, in that order; the rest after. */
static void apply_element_order(struct smp *s, json_t *list, const json_t *order,
                                const char *merge_key)
{
    if (!json_is_array(list) || !json_is_array(order))
        return;
    json_t *sorted = json_array();
    json_t *rest = ck__json_copy(list);
    if (!sorted || !rest) {
        smp_nomem(s);
        goto out;
    }
    size_t i;
    json_t *want;
    json_array_foreach(order, i, want)
    {
        const json_t *key_value = merge_key ? json_object_get(want, merge_key) : want;
        if (!smp_work(s, json_array_size(rest)))
            goto out;
        size_t j;
        json_t *item;
        json_array_foreach(rest, j, item)
        {
            const json_t *have = merge_key ? json_object_get(item, merge_key) : item;
            if (have && key_value && json_equal((json_t *)have, (json_t *)key_value)) {
                if (json_array_append(sorted, item) < 0) {
                    smp_nomem(s);
                    goto out;
                }
                json_array_remove(rest, j);
                break;
            }
        }
    }
    /* list changes only once sorted holds every element */
    if (json_array_extend(sorted, rest) < 0) {
        smp_nomem(s);
        goto out;
    }
    json_array_clear(list);
    if (json_array_extend(list, sorted) < 0)
        smp_nomem(s);
out:
    json_decref(sorted);
    json_decref(rest);
}

/*
 * Merges patch (an object) into original (consumed; may be NULL) under
 * schema. Returns the merged value, or NULL when "$patch": "delete" asks for
 * the whole map to go.
 */
static json_t *smp_merge_map(struct smp *s, json_t *original, const json_t *patch,
                             const json_t *schema, int depth)
{
    if (depth > MAX_DEPTH) {
        smp_fail(s, "%s", "patch nested too deeply");
        return original;
    }
    const char *directive = json_string_value(json_object_get(patch, "$patch"));
    if (directive && strcmp(directive, "delete") == 0) {
        json_decref(original);
        return NULL;
    }
    if (directive && strcmp(directive, "replace") == 0) {
        json_decref(original);
        json_t *out = strip_directives(patch);
        if (!out)
            smp_nomem(s);
        return out;
    }
    if (directive && strcmp(directive, "merge") != 0) {
        smp_fail(s, "unknown $patch directive \"%s\"", directive);
        return original;
    }
    json_t *out = json_is_object(original) ? ck__json_copy(original) : json_object();
    json_decref(original);
    if (!out) {
        smp_nomem(s);
        return NULL;
    }

    const char *key;
    json_t *pv;
    json_object_foreach((json_t *)patch, key, pv)
    {
        if (is_directive(key)) {
            static const char delete_prefix[] = "$deleteFromPrimitiveList/";
            if (strncmp(key, delete_prefix, sizeof(delete_prefix) - 1) == 0) {
                json_t *list = json_object_get(out, key + sizeof(delete_prefix) - 1);
                size_t i;
                json_t *gone;
                json_array_foreach(pv, i, gone)
                {
                    if (!smp_work(s, json_array_size(list)))
                        return out;
                    for (size_t j = json_array_size(list); j-- > 0;)
                        if (json_equal(json_array_get(list, j), gone))
                            json_array_remove(list, j);
                }
            } else if (strcmp(key, "$retainKeys") != 0 && strcmp(key, "$patch") != 0 &&
                       strncmp(key, "$setElementOrder/", 17) != 0) {
                smp_fail(s, "unknown directive \"%s\"", key);
                return out;
            }
            continue;
        }
        if (json_is_null(pv)) {
            json_object_del(out, key);
            continue;
        }
        const json_t *prop = schema ? member_schema(s, schema, key) : NULL;
        json_t *ov = json_incref(json_object_get(out, key));
        json_t *merged;
        if (json_is_object(pv)) {
            merged = smp_merge_map(s, ov, pv, prop, depth + 1);
        } else if (json_is_array(pv)) {
            bool merge;
            const char *merge_key;
            list_strategy(s, prop, &merge, &merge_key);
            const json_t *items = json_object_get(ck__schema_resolve(s->set, prop), "items");
            /* a merged list starts from a copy of the old one; any other list replaces it */
            json_t *copy = merge && ov ? ck__json_copy(ov) : NULL;
            if (merge && ov && !copy)
                merged = NULL;
            else if (merge && merge_key)
                merged = merge_keyed_list(s, copy, pv, merge_key, items, depth + 1);
            else if (merge)
                merged = merge_primitive_list(s, copy, pv);
            else
                merged = strip_directives(pv);
            /* the list functions say when they fail; strip_directives() fails only for memory */
            if (!merged && (!merge || ov))
                smp_nomem(s);
            json_decref(ov);
        } else {
            json_decref(ov);
            merged = ck__json_copy(pv);
            if (!merged)
                smp_nomem(s);
        }
        if (s->failed) {
            json_decref(merged);
            return out;
        }
        if (merged && json_object_set_new(out, key, merged) < 0) {
            smp_nomem(s);
            return out;
        }
        if (!merged)
            json_object_del(out, key);
    }

    /* $setElementOrder/<list> after merging, using the list's merge key */
    json_object_foreach((json_t *)patch, key, pv)
    {
        if (strncmp(key, "$setElementOrder/", 17) != 0)
            continue;
        const char *list_name = key + 17;
        bool merge;
        const char *merge_key = NULL;
        list_strategy(s, schema ? member_schema(s, schema, list_name) : NULL, &merge, &merge_key);
        apply_element_order(s, json_object_get(out, list_name), pv, merge_key);
    }
    /* $retainKeys: only these keys survive (union types such as strategy) */
    const json_t *retain = json_object_get(patch, "$retainKeys");
    if (retain) {
        if (!json_is_array(retain)) {
            smp_fail(s, "%s", "$retainKeys must be a list of keys");
            return out;
        }
        void *tmp;
        json_t *value;
        json_object_foreach_safe(out, tmp, key, value)
        {
            bool keep = false;
            size_t i;
            json_t *k;
            json_array_foreach(retain, i, k)
            {
                keep = keep || (json_is_string(k) && strcmp(json_string_value(k), key) == 0);
            }
            if (!keep)
                json_object_del(out, key);
        }
    }
    return out;
}

int ck_strategic_merge_patch(const struct ck_schemas *set, const char *name, const json_t *doc,
                             const json_t *patch, json_t **ret_doc, struct ck_err *reterr)
{
    return ck_strategic_merge_patch_bounded(set, name, doc, patch, &ck_patch_default_limits,
                                            ret_doc, reterr);
}

int ck_strategic_merge_patch_bounded(const struct ck_schemas *set, const char *name,
                                     const json_t *doc, const json_t *patch,
                                     const struct ck_patch_limits *limits, json_t **ret_doc,
                                     struct ck_err *reterr)
{
    if (!json_is_object(patch))
        return ck_err_set(reterr, CK_EINVAL, "a strategic merge patch must be a JSON object");
    struct smp s = {.set = set, .err = reterr, .max_comparisons = limits->max_comparisons};
    const json_t *schema = ck_schemas_get(set, name);
    json_t *copy = doc ? ck__json_copy(doc) : NULL;
    if (doc && !copy)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    json_t *out = smp_merge_map(&s, copy, patch, schema, 0);
    if (s.failed) {
        json_decref(out);
        return s.failed;
    }
    if (!out)
        out = json_object(); /* "$patch": "delete" at the top: nothing left */
    if (!out)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    *ret_doc = out;
    return 0;
}
