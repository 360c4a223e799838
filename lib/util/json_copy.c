/*
 * json_copy.c - a deep copy of a jansson tree without json_deep_copy()'s cycle check, and
 * the look-up of an array's object by one of its members (ck__json_find), an array
 * sorted in place (ck__json_array_sort), and a status condition set (ck__json_set_condition).
 *
 * jansson 2.14's json_deep_copy() guards every object and array it enters
 * against a reference cycle: it prints the value's address into a key and
 * adds that key to a hash table, then removes it. Profiles of the API server
 * put that at about half of every copy of an object. The trees copied here
 * are parsed or built by us and cannot hold a cycle (jansson refuses to add
 * a container to itself, and no code here links a tree back into itself), so
 * the copy only bounds its depth, as the parser does.
 *
 * Threading: none of its own; the tree must not change meanwhile.
 *
 * Tested in tests/util/test_json_copy.c.
 */
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "ckube/util.h"

/* jansson's parser refuses deeper documents (JSON_PARSER_MAX_DEPTH) */
#define MAX_DEPTH 2048

static json_t *copy(const json_t *v, int depth)
{
    if (depth > MAX_DEPTH)
        return NULL;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        json_t *out = json_object();
        const char *key;
        size_t key_len;
        json_t *member;
        json_object_keylen_foreach((json_t *)v, key, key_len, member)
        {
            if (!out)
                break;
            /* json_object_setn_new_nocheck releases what it could not insert */
            if (json_object_setn_new_nocheck(out, key, key_len, copy(member, depth + 1)) < 0)
                out = (json_decref(out), NULL);
        }
        return out;
    }
    case JSON_ARRAY: {
        json_t *out = json_array();
        size_t i;
        json_t *item;
        json_array_foreach(v, i, item)
        {
            if (!out)
                break;
            if (json_array_append_new(out, copy(item, depth + 1)) < 0)
                out = (json_decref(out), NULL);
        }
        return out;
    }
    case JSON_STRING:
        return json_stringn_nocheck(json_string_value(v), json_string_length(v));
    case JSON_INTEGER:
        return json_integer(json_integer_value(v));
    case JSON_REAL:
        return json_real(json_real_value(v));
    case JSON_TRUE:
    case JSON_FALSE:
    case JSON_NULL:
        return json_incref((json_t *)v); /* jansson's singletons */
    }
    return NULL;
}

json_t *ck__json_copy(const json_t *json)
{
    return json ? copy(json, 0) : NULL;
}

json_t *ck__json_find(const json_t *array, const char *key, const char *value)
{
    for (size_t i = 0; i < json_array_size(array); i++) {
        const char *s = json_string_value(json_object_get(json_array_get(array, i), key));
        if (s && strcmp(s, value) == 0)
            return json_array_get(array, i);
    }
    return NULL;
}

int ck__json_array_sort(json_t *array, int (*cmp)(const void *, const void *))
{
    size_t n = json_array_size(array);
    if (n < 2)
        return 0;
    json_t **items = ck__calloc(n, sizeof(*items));
    if (!items)
        return CK_ENOMEM;
    for (size_t i = 0; i < n; i++)
        items[i] = json_incref(json_array_get(array, i));
    qsort(items, n, sizeof(*items), cmp);
    json_array_clear(array);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(array, items[i]);
    free(items);
    return 0;
}

/* parent[key] when it has type, else a new one of that type stored there; NULL when no memory. */
static json_t *member(json_t *parent, const char *key, json_type type)
{
    json_t *v = json_object_get(parent, key);
    if (v && json_typeof(v) == type)
        return v;
    v = type == JSON_ARRAY ? json_array() : json_object();
    return parent && json_object_set_new(parent, key, v) == 0 ? v : NULL;
}

int ck__json_set_condition(json_t *obj, const char *type, const char *status, const char *reason,
                           const char *message, long long now)
{
    json_t *conditions = member(member(obj, "status", JSON_OBJECT), "conditions", JSON_ARRAY);
    json_t *cond = ck__json_find(conditions, "type", type);
    if (conditions && !cond) {
        cond = json_pack("{s:s}", "type", type);
        if (json_array_append_new(conditions, cond) < 0)
            cond = NULL;
    }
    if (!cond)
        return CK_ENOMEM;
    const char *was = json_string_value(json_object_get(cond, "status"));
    int failed = 0;
    if (!was || strcmp(was, status) != 0) {
        char at[CK__TIME_LEN];
        ck__time_format((int64_t)now, -1, at, sizeof(at));
        failed |= json_object_set_new(cond, "lastTransitionTime", json_string(at));
    }
    failed |= json_object_set_new(cond, "status", json_string(status));
    failed |= json_object_set_new(cond, "reason", json_string(reason));
    failed |= json_object_set_new(cond, "message", json_string(message));
    return failed ? CK_ENOMEM : 0;
}
