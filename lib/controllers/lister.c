/*
 * lister.c - listers: a controller's reads from an informer's cache (client-go's
 * generated listers, e.g. listers/apps/v1 ReplicaSetLister: Get(name) in a namespace,
 * List(selector)).
 *
 * The one implementation reads an indexer: an informer's cache in production, an
 * indexer the test fills in unit tests, so a controller's sync runs the same code in
 * both. A list of one namespace uses the indexer's namespace index when it has one and
 * filters a full list otherwise; a selector filters on metadata.labels.
 *
 * Threading: the indexer's; the lister itself has no state.
 *
 * Tested by tests/controllers/test_controller_utils.c (listers over an
 * indexer the test fills) and, over informers, test_replicaset.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/controllers.h"
#include "ckube/internal/util.h"

static int indexer_get(void *data, const char *namespace, const char *name, const json_t **ret_obj)
{
    char key[512];
    if (!name)
        return CK_ENOENT;
    if (namespace && *namespace)
        snprintf(key, sizeof(key), "%s/%s", namespace, name);
    else
        snprintf(key, sizeof(key), "%s", name);
    return ck_indexer_get_by_key(data, key, ret_obj);
}

/* Keeps the objects of list that are in namespace (NULL: any) and match selector. */
static void filter(struct ck_obj_list *list, const char *namespace,
                   const struct ck_label_selector *selector)
{
    size_t kept = 0;
    for (size_t i = 0; i < list->n; i++) {
        const json_t *meta = json_object_get(list->items[i], "metadata");
        const char *ns = json_string_value(json_object_get(meta, "namespace"));
        bool keep =
            (!namespace || strcmp(ns ? ns : "", namespace) == 0) &&
            (!selector || ck_label_selector_matches(selector, json_object_get(meta, "labels")));
        if (keep)
            list->items[kept++] = list->items[i];
        else
            ck_cached_unref(list->items[i]);
    }
    list->n = kept;
}

static int by_key(const void *pa, const void *pb)
{
    const json_t *a = *(const json_t *const *)pa, *b = *(const json_t *const *)pb;
    const json_t *ma = json_object_get(a, "metadata"), *mb = json_object_get(b, "metadata");
    const char *na = json_string_value(json_object_get(ma, "namespace"));
    const char *nb = json_string_value(json_object_get(mb, "namespace"));
    int c = strcmp(na ? na : "", nb ? nb : "");
    if (c != 0)
        return c;
    na = json_string_value(json_object_get(ma, "name"));
    nb = json_string_value(json_object_get(mb, "name"));
    return strcmp(na ? na : "", nb ? nb : "");
}

static int indexer_list(void *data, const char *namespace, const struct ck_label_selector *selector,
                        struct ck_obj_list *ret_list, struct ck_err *reterr)
{
    struct ck_indexer *ix = data;
    bool one_ns = namespace && *namespace;
    int r =
        one_ns ? ck_indexer_by_index(ix, CK_INDEX_NAMESPACE, namespace, ret_list, NULL) : CK_ENOENT;
    if (r == 0)
        one_ns = false; /* the index did the namespace part */
    else if (r == CK_ENOENT && (r = ck_indexer_list(ix, ret_list)) == 0)
        qsort(ret_list->items, ret_list->n, sizeof(*ret_list->items), by_key);
    if (r < 0)
        return ck_err_set(reterr, r, "cannot list the cache");
    filter(ret_list, one_ns ? namespace : NULL, selector);
    return 0;
}

static const struct ck_lister_ops indexer_ops = {.get = indexer_get, .list = indexer_list};

void ck_lister_init(struct ck_lister *l, struct ck_indexer *ix)
{
    l->ops = &indexer_ops;
    l->data = ix;
}

int ck_lister_get(const struct ck_lister *l, const char *namespace, const char *name,
                  const json_t **ret_obj)
{
    return l->ops->get(l->data, namespace, name, ret_obj);
}

int ck_lister_list(const struct ck_lister *l, const char *namespace,
                   const struct ck_label_selector *selector, struct ck_obj_list *ret_list,
                   struct ck_err *reterr)
{
    return l->ops->list(l->data, namespace, selector, ret_list, reterr);
}
