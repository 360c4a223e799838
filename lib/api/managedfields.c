/*
 * managedfields.c - field sets in Kubernetes' FieldsV1 form and the
 * metadata.managedFields entries that carry them.
 *
 * A field set (structured-merge-diff's fieldpath.Set) is a set of paths into
 * an object. A path is a sequence of path elements, each written as FieldsV1
 * writes it:
 *   f:<name>         a field of a struct or a key of a map
 *   k:<json object>  the element of an associative list with these key fields
 *   v:<json value>   the element of a set (a list of scalars)
 *   i:<index>        an element of a list by position
 * FieldsV1 is a tree of JSON objects keyed by path elements; a node whose
 * path is itself a member is `{}` when it has no children and carries a
 * `".": {}` member when it has.
 *
 * Here a set is that tree as a jansson object in one normal form: every
 * member node has ".", whether it has children or not, and no node is
 * empty (a node neither member nor parent of one is removed). Union,
 * difference and intersection are walks over two such trees;
 * ck_fieldset_to_fields_v1() writes the FieldsV1 form back with `{}` for
 * leaves and the elements sorted as structured-merge-diff sorts them (".",
 * then fields, keys, values, indexes, each by text).
 *
 * Managed fields entries (metav1.ManagedFieldsEntry) decode into
 * struct ck_managed_fields and encode back in the order kube-apiserver
 * writes them (Apply before Update, then by time, manager, apiVersion,
 * subresource).
 *
 * Mirrors sigs.k8s.io/structured-merge-diff/v4 fieldpath (set.go,
 * serialize.go, path.go) and k8s.io/apiserver/pkg/endpoints/handlers/
 * fieldmanager/internal (managedfields.go). Everything is pure; no state.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define MAX_DEPTH 64

static const char member_key[] = ".";

json_t *ck_fieldset_new(void)
{
    return json_object();
}

bool ck_fieldset_is_empty(const json_t *set)
{
    return !set || json_object_size(set) == 0;
}

/* True when text is a path element FieldsV1 accepts: f:, k:{...}, v:<json>, i:<n>. */
/* 0 when key is a path element FieldsV1 accepts, CK_EINVAL when not, CK_ENOMEM. */
static int check_element(const char *key)
{
    if (strncmp(key, "f:", 2) == 0)
        return 0;
    if (strncmp(key, "k:", 2) == 0 || strncmp(key, "v:", 2) == 0) {
        json_t *v = NULL;
        if (ck_json_loadb(key + 2, strlen(key + 2), JSON_DECODE_ANY, &v, NULL) == CK_ENOMEM)
            return CK_ENOMEM;
        bool ok = v && (key[0] == 'v' || (json_is_object(v) && json_object_size(v) > 0));
        json_decref(v);
        return ok ? 0 : CK_EINVAL;
    }
    if (strncmp(key, "i:", 2) == 0) {
        const char *p = key + 2;
        if (!*p)
            return CK_EINVAL;
        for (; *p; p++)
            if (*p < '0' || *p > '9')
                return CK_EINVAL;
        return 0;
    }
    return CK_EINVAL;
}

/* check_element() with *reterr filled. */
static int valid_element(const char *key, struct ck_err *reterr)
{
    int r = check_element(key);
    if (r == CK_ENOMEM)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (r < 0)
        return ck_err_set(reterr, CK_EINVAL, "FieldsV1 has an invalid path element %s", key);
    return 0;
}

/* Parses one FieldsV1 node into out (a normal-form node). 0, CK_EINVAL or CK_ENOMEM. */
static int parse_node(const json_t *node, json_t *out, int depth, struct ck_err *reterr)
{
    if (!json_is_object(node))
        return ck_err_set(reterr, CK_EINVAL, "FieldsV1 node is not an object");
    if (depth > MAX_DEPTH)
        return ck_err_set(reterr, CK_EINVAL, "FieldsV1 is nested too deeply");
    const char *key;
    json_t *child;
    bool member = json_object_size(node) == 0;
    json_object_foreach((json_t *)node, key, child)
    {
        if (strcmp(key, member_key) == 0) {
            if (!json_is_object(child) || json_object_size(child) != 0)
                return ck_err_set(reterr, CK_EINVAL, "FieldsV1 \".\" must be an empty object");
            member = true;
            continue;
        }
        int bad = valid_element(key, reterr);
        if (bad < 0)
            return bad;
        json_t *sub = json_object();
        if (!sub || json_object_set_new(out, key, sub) < 0)
            return ck_err_set(reterr, CK_ENOMEM, "out of memory");
        int r = parse_node(child, sub, depth + 1, reterr);
        if (r < 0)
            return r;
    }
    if (member && json_object_set_new(out, member_key, json_object()) < 0)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    return 0;
}

int ck_fieldset_from_fields_v1(const json_t *fields_v1, json_t **ret_set, struct ck_err *reterr)
{
    json_t *set = json_object();
    if (!set)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    int r = 0;
    if (fields_v1) {
        const char *key;
        json_t *child;
        if (!json_is_object(fields_v1))
            r = ck_err_set(reterr, CK_EINVAL, "FieldsV1 is not an object");
        json_object_foreach((json_t *)fields_v1, key, child)
        {
            if (r < 0)
                break;
            r = strcmp(key, member_key) == 0
                    ? ck_err_set(reterr, CK_EINVAL, "FieldsV1 has an invalid path element %s", key)
                    : valid_element(key, reterr);
            if (r < 0)
                break;
            json_t *sub = json_object();
            if (!sub || json_object_set_new(set, key, sub) < 0)
                r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
            else
                r = parse_node(child, sub, 1, reterr);
        }
    }
    if (r < 0) {
        json_decref(set);
        return r;
    }
    *ret_set = set;
    return 0;
}

/* The sort rank of a path element's kind: ".", f:, k:, v:, i:. */
static int element_rank(const char *key)
{
    switch (key[0]) {
    case '.':
        return 0;
    case 'f':
        return 1;
    case 'k':
        return 2;
    case 'v':
        return 3;
    default:
        return 4;
    }
}

static int compare_elements(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    int rx = element_rank(x), ry = element_rank(y);
    if (rx != ry)
        return rx - ry;
    if (rx == 4) { /* indexes by number */
        long long ix = atoll(x + 2), iy = atoll(y + 2);
        return ix < iy ? -1 : ix > iy;
    }
    return strcmp(x, y);
}

/* The keys of an object, sorted as FieldsV1 writes them; caller frees the array. */
static const char **sorted_keys(const json_t *node, size_t *ret_n)
{
    size_t n = json_object_size(node), i = 0;
    const char **keys = ck__calloc(n ? n : 1, sizeof(*keys));
    if (!keys)
        return NULL;
    const char *key;
    json_t *child;
    json_object_foreach((json_t *)node, key, child)
    {
        keys[i++] = key;
    }
    qsort(keys, n, sizeof(*keys), compare_elements);
    *ret_n = n;
    return keys;
}

static json_t *encode_node(const json_t *node)
{
    json_t *out = json_object();
    size_t n = 0;
    const char **keys = out ? sorted_keys(node, &n) : NULL;
    if (!keys) {
        json_decref(out);
        return NULL;
    }
    bool only_member = n == 1 && strcmp(keys[0], member_key) == 0;
    for (size_t i = 0; i < n && !only_member; i++) {
        const json_t *child = json_object_get(node, keys[i]);
        json_t *enc = strcmp(keys[i], member_key) == 0 ? json_object() : encode_node(child);
        if (!enc || json_object_set_new(out, keys[i], enc) < 0) {
            free(keys);
            json_decref(out);
            return NULL;
        }
    }
    free(keys);
    return out;
}

json_t *ck_fieldset_to_fields_v1(const json_t *set)
{
    return encode_node(set);
}

int ck_fieldset_insert(json_t *set, const char *const *path, size_t n)
{
    json_t *node = set;
    for (size_t i = 0; i < n; i++) {
        node = ck__object_at(node, path[i]);
        if (!node)
            return CK_ENOMEM;
    }
    if (n == 0)
        return 0; /* the empty path (the object itself) is never tracked */
    return json_object_set_new(node, member_key, json_object()) < 0 ? CK_ENOMEM : 0;
}

bool ck_fieldset_has(const json_t *set, const char *const *path, size_t n)
{
    const json_t *node = set;
    for (size_t i = 0; i < n && node; i++)
        node = json_object_get(node, path[i]);
    return node && json_object_get(node, member_key);
}

/* ---- set algebra ---------------------------------------------------------- */

enum set_op { OP_UNION, OP_DIFFERENCE, OP_INTERSECTION };

/* a OP b as a new node (NULL when out of memory); empty children are left out. */
static json_t *combine(const json_t *a, const json_t *b, enum set_op op, int depth)
{
    json_t *out = json_object();
    if (!out)
        return NULL;
    bool am = a && json_object_get(a, member_key), bm = b && json_object_get(b, member_key);
    bool member = op == OP_UNION ? am || bm : op == OP_DIFFERENCE ? am && !bm : am && bm;
    if (member && json_object_set_new(out, member_key, json_object()) < 0)
        goto out_nomem;
    if (depth > MAX_DEPTH)
        return out;
    const char *key;
    json_t *child;
    json_object_foreach((json_t *)a, key, child)
    {
        if (strcmp(key, member_key) == 0)
            continue;
        const json_t *other = b ? json_object_get(b, key) : NULL;
        if (op == OP_INTERSECTION && !other)
            continue;
        json_t *sub = combine(child, other, op, depth + 1);
        if (!sub)
            goto out_nomem;
        if (json_object_size(sub) == 0)
            json_decref(sub);
        else if (json_object_set_new(out, key, sub) < 0)
            goto out_nomem;
    }
    if (op == OP_UNION) {
        json_object_foreach((json_t *)b, key, child)
        {
            if (strcmp(key, member_key) == 0 || (a && json_object_get(a, key)))
                continue;
            json_t *sub = ck__json_copy(child);
            if (!sub || json_object_set_new(out, key, sub) < 0)
                goto out_nomem;
        }
    }
    return out;

out_nomem:
    json_decref(out);
    return NULL;
}

json_t *ck_fieldset_union(const json_t *a, const json_t *b)
{
    return combine(a, b, OP_UNION, 0);
}

json_t *ck_fieldset_difference(const json_t *a, const json_t *b)
{
    return combine(a, b, OP_DIFFERENCE, 0);
}

json_t *ck_fieldset_intersection(const json_t *a, const json_t *b)
{
    return combine(a, b, OP_INTERSECTION, 0);
}

/* ---- walking and printing ------------------------------------------------ */

static int walk(const json_t *node, const char **path, size_t depth, ck_fieldset_visit_fn visit,
                void *arg)
{
    if (depth >= CK_FIELDSET_MAX_DEPTH)
        return 0;
    size_t n = 0;
    const char **keys = sorted_keys(node, &n);
    if (!keys)
        return CK_ENOMEM;
    int r = 0;
    for (size_t i = 0; i < n && r == 0; i++) {
        if (strcmp(keys[i], member_key) == 0) {
            r = depth ? visit(path, depth, arg) : 0;
            continue;
        }
        path[depth] = keys[i];
        r = walk(json_object_get(node, keys[i]), path, depth + 1, visit, arg);
    }
    free(keys);
    return r;
}

int ck_fieldset_walk(const json_t *set, ck_fieldset_visit_fn visit, void *arg)
{
    const char *path[CK_FIELDSET_MAX_DEPTH];
    return set ? walk(set, path, 0, visit, arg) : 0;
}

/* Appends a JSON value as structured-merge-diff prints it (strings quoted). */
static int append_value(struct ck__buf *b, const json_t *v)
{
    char *text = ck__json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY, NULL);
    int r = text ? ck__buf_adds(b, text) : CK_ENOMEM;
    free(text);
    return r;
}

char *ck_fieldpath_string(const char *const *path, size_t n)
{
    struct ck__buf b = {0};
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e = path[i];
        const char *rest = e + 2;
        if (e[0] == 'f') {
            failed |= ck__buf_adds(&b, ".");
            failed |= ck__buf_adds(&b, rest);
            continue;
        }
        if (e[0] == 'i') {
            failed |= ck__buf_adds(&b, "[");
            failed |= ck__buf_adds(&b, rest);
            failed |= ck__buf_adds(&b, "]");
            continue;
        }
        json_t *v = NULL;
        ck_json_loadb(rest, strlen(rest), JSON_DECODE_ANY, &v, NULL);
        failed |= ck__buf_adds(&b, "[");
        if (e[0] == 'v') {
            failed |= ck__buf_adds(&b, "=");
            failed |= append_value(&b, v);
        } else {
            size_t nk = 0;
            const char **keys = json_is_object(v) ? sorted_keys(v, &nk) : NULL;
            for (size_t k = 0; keys && k < nk; k++) {
                if (k)
                    failed |= ck__buf_adds(&b, ",");
                failed |= ck__buf_adds(&b, keys[k]);
                failed |= ck__buf_adds(&b, "=");
                failed |= append_value(&b, json_object_get(v, keys[k]));
            }
            free(keys);
        }
        failed |= ck__buf_adds(&b, "]");
        json_decref(v);
    }
    if (failed) {
        ck__buf_release(&b);
        return NULL;
    }
    char *out = ck__buf_take(&b);
    return out ? out : ck__strdup("");
}

/* ---- managedFields entries ----------------------------------------------- */

void ck_managed_fields_release(struct ck_managed_fields *mf)
{
    for (size_t i = 0; mf && i < mf->n; i++) {
        struct ck_managed_entry *e = &mf->entries[i];
        free(e->manager);
        free(e->operation);
        free(e->api_version);
        free(e->time);
        free(e->subresource);
        json_decref(e->set);
    }
    if (mf) {
        free(mf->entries);
        memset(mf, 0, sizeof(*mf));
    }
}

static char *dup_or_empty(const char *s)
{
    return ck__strdup(s ? s : "");
}

int ck_managed_fields_add(struct ck_managed_fields *mf, const char *manager, const char *operation,
                          const char *api_version, const char *time, const char *subresource,
                          json_t *set)
{
    struct ck_managed_entry *grown = ck__realloc(mf->entries, (mf->n + 1) * sizeof(*mf->entries));
    if (!grown) {
        json_decref(set);
        return CK_ENOMEM;
    }
    mf->entries = grown;
    struct ck_managed_entry *e = &mf->entries[mf->n++];
    memset(e, 0, sizeof(*e));
    e->set = set;
    e->manager = dup_or_empty(manager);
    e->operation = dup_or_empty(operation);
    e->api_version = dup_or_empty(api_version);
    e->time = time ? ck__strdup(time) : NULL;
    e->subresource = dup_or_empty(subresource);
    if (!e->manager || !e->operation || !e->api_version || (time && !e->time) || !e->subresource)
        return CK_ENOMEM; /* the entry stays and is released with the rest */
    return 0;
}

int ck_managed_fields_decode(const json_t *array, struct ck_managed_fields *ret,
                             struct ck_err *reterr)
{
    memset(ret, 0, sizeof(*ret));
    if (!array)
        return 0;
    if (!json_is_array(array))
        return ck_err_set(reterr, CK_EINVAL, "managedFields must be a list");
    size_t i;
    json_t *item;
    json_array_foreach(array, i, item)
    {
        const char *type = json_string_value(json_object_get(item, "fieldsType"));
        const char *op = json_string_value(json_object_get(item, "operation"));
        if (!json_is_object(item) || !type || strcmp(type, "FieldsV1") != 0) {
            ck_managed_fields_release(ret);
            return ck_err_set(reterr, CK_EINVAL, "managedFields[%zu]: invalid fieldsType \"%s\"", i,
                              type ? type : "");
        }
        if (!op || (strcmp(op, "Apply") != 0 && strcmp(op, "Update") != 0)) {
            ck_managed_fields_release(ret);
            return ck_err_set(reterr, CK_EINVAL, "managedFields[%zu]: invalid operation \"%s\"", i,
                              op ? op : "");
        }
        json_t *set = NULL;
        int r = ck_fieldset_from_fields_v1(json_object_get(item, "fieldsV1"), &set, reterr);
        if (r == 0)
            r = ck_managed_fields_add(ret, json_string_value(json_object_get(item, "manager")), op,
                                      json_string_value(json_object_get(item, "apiVersion")),
                                      json_string_value(json_object_get(item, "time")),
                                      json_string_value(json_object_get(item, "subresource")), set);
        if (r < 0) {
            ck_managed_fields_release(ret);
            return r == CK_ENOMEM ? ck_err_set(reterr, CK_ENOMEM, "out of memory") : r;
        }
    }
    return 0;
}

static int compare_entries(const void *pa, const void *pb)
{
    const struct ck_managed_entry *a = pa, *b = pb;
    int c = strcmp(a->operation, b->operation);
    if (c)
        return c;
    /* RFC 3339 UTC times of one format order as text; no time sorts first */
    c = strcmp(a->time ? a->time : "", b->time ? b->time : "");
    if (c)
        return c;
    if ((c = strcmp(a->manager, b->manager)) != 0)
        return c;
    if ((c = strcmp(a->api_version, b->api_version)) != 0)
        return c;
    return strcmp(a->subresource, b->subresource);
}

json_t *ck_managed_fields_encode(struct ck_managed_fields *mf)
{
    if (mf->n > 1)
        qsort(mf->entries, mf->n, sizeof(*mf->entries), compare_entries);
    json_t *out = json_array();
    for (size_t i = 0; out && i < mf->n; i++) {
        const struct ck_managed_entry *e = &mf->entries[i];
        if (ck_fieldset_is_empty(e->set))
            continue;
        json_t *entry = json_pack("{s:s, s:s, s:s}", "manager", e->manager, "operation",
                                  e->operation, "apiVersion", e->api_version);
        json_t *fields = ck_fieldset_to_fields_v1(e->set);
        int failed = !entry || !fields;
        if (!failed && e->time)
            failed |= json_object_set_new(entry, "time", json_string(e->time));
        if (!failed)
            failed |= json_object_set_new(entry, "fieldsType", json_string("FieldsV1"));
        if (!failed) {
            failed |= json_object_set_new(entry, "fieldsV1", fields);
            fields = NULL;
        }
        if (!failed && e->subresource[0])
            failed |= json_object_set_new(entry, "subresource", json_string(e->subresource));
        json_decref(fields);
        if (failed || json_array_append_new(out, entry) < 0) {
            if (failed)
                json_decref(entry);
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

ssize_t ck_managed_fields_find(const struct ck_managed_fields *mf, const char *manager,
                               const char *operation, const char *api_version,
                               const char *subresource)
{
    for (size_t i = 0; i < mf->n; i++) {
        const struct ck_managed_entry *e = &mf->entries[i];
        /* an applier is one manager whatever apiVersion it applied with */
        bool apply = strcmp(operation, "Apply") == 0;
        if (strcmp(e->manager, manager) == 0 && strcmp(e->operation, operation) == 0 &&
            strcmp(e->subresource, subresource ? subresource : "") == 0 &&
            (apply || strcmp(e->api_version, api_version) == 0))
            return (ssize_t)i;
    }
    return -1;
}
