/*
 * graph.c - the garbage collector's dependency graph (kubernetes
 * pkg/controller/garbagecollector/graph.go and uid_cache's node map).
 *
 * Nodes are keyed by uid. A node knows its identity (apiVersion, kind, namespace, name,
 * uid), the ownerReferences it was last seen with, and its dependents: the nodes whose
 * ownerReferences name its uid. Owners point to dependents, never the other way round
 * (a dependent names its owners by uid), so removing a node only has to unlink it from
 * its owners' dependent lists. A node made for an ownerReference whose owner no
 * informer has shown yet is virtual; the informer's event for that uid makes it real.
 *
 * Cycles of ownerReferences are harmless: nothing here walks the graph recursively;
 * the collector only ever looks at a node and its direct neighbours.
 *
 * Threading: none of its own; the collector calls it under gc->lock, and only the
 * graph builder thread changes it.
 *
 * Tested by tests/controllers/test_gc_graph.c.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static char *dup_or_empty(const char *s)
{
    return ck__strdup(s ? s : "");
}

void ck__gc_refs_free(struct ck__gc_ref *refs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(refs[i].api_version);
        free(refs[i].kind);
        free(refs[i].name);
        free(refs[i].uid);
    }
    free(refs);
}

int ck__gc_refs_parse(const json_t *obj, struct ck__gc_ref **ret, size_t *ret_n)
{
    const json_t *list = json_object_get(json_object_get(obj, "metadata"), "ownerReferences");
    size_t n = json_array_size(list), k = 0;
    *ret = NULL;
    *ret_n = 0;
    if (!n)
        return 0;
    struct ck__gc_ref *refs = ck__calloc(n, sizeof(*refs));
    if (!refs)
        return CK_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const json_t *r = json_array_get(list, i);
        const char *uid = json_string_value(json_object_get(r, "uid"));
        if (!uid || !*uid)
            continue; /* the server validates references; skip what cannot be followed */
        struct ck__gc_ref *o = &refs[k++];
        o->api_version = dup_or_empty(json_string_value(json_object_get(r, "apiVersion")));
        o->kind = dup_or_empty(json_string_value(json_object_get(r, "kind")));
        o->name = dup_or_empty(json_string_value(json_object_get(r, "name")));
        o->uid = ck__strdup(uid);
        o->controller = json_is_true(json_object_get(r, "controller"));
        o->block = json_is_true(json_object_get(r, "blockOwnerDeletion"));
        if (!o->api_version || !o->kind || !o->name || !o->uid) {
            ck__gc_refs_free(refs, k);
            return CK_ENOMEM;
        }
    }
    *ret = refs;
    *ret_n = k;
    return 0;
}

int ck__gc_identity_set(struct ck__gc_identity *id, const char *api_version, const char *kind,
                        const char *namespace, const char *name, const char *uid)
{
    id->api_version = dup_or_empty(api_version);
    id->kind = dup_or_empty(kind);
    id->namespace = dup_or_empty(namespace);
    id->name = dup_or_empty(name);
    id->uid = dup_or_empty(uid);
    if (!id->api_version || !id->kind || !id->namespace || !id->name || !id->uid) {
        ck__gc_identity_release(id);
        return CK_ENOMEM;
    }
    return 0;
}

void ck__gc_identity_release(struct ck__gc_identity *id)
{
    free(id->api_version);
    free(id->kind);
    free(id->namespace);
    free(id->name);
    free(id->uid);
    memset(id, 0, sizeof(*id));
}

bool ck__gc_identity_equal(const struct ck__gc_identity *a, const struct ck__gc_identity *b)
{
    return strcmp(a->api_version, b->api_version) == 0 && strcmp(a->kind, b->kind) == 0 &&
           strcmp(a->namespace, b->namespace) == 0 && strcmp(a->name, b->name) == 0 &&
           strcmp(a->uid, b->uid) == 0;
}

struct ck__gc_node *ck__gc_node_new(const struct ck__gc_identity *id)
{
    struct ck__gc_node *n = ck__calloc(1, sizeof(*n));
    if (n && ck__gc_identity_set(&n->id, id->api_version, id->kind, id->namespace, id->name,
                                 id->uid) < 0) {
        free(n);
        return NULL;
    }
    return n;
}

void ck__gc_node_free(struct ck__gc_node *n)
{
    if (!n)
        return;
    ck__gc_identity_release(&n->id);
    ck__gc_refs_free(n->owners, n->n_owners);
    free(n->deps);
    free(n);
}

struct ck__gc_node *ck__gc_graph_get(struct ck__strmap *g, const char *uid)
{
    struct ck__strmap_entry *e = ck__strmap_find(g, uid);
    return e ? e->value : NULL;
}

int ck__gc_graph_put(struct ck__strmap *g, struct ck__gc_node *n)
{
    bool created = false;
    struct ck__strmap_entry *e = ck__strmap_put(g, n->id.uid, n, &created);
    if (!e)
        return CK_ENOMEM;
    e->value = n;
    return 0;
}

int ck__gc_node_add_dependent(struct ck__gc_node *owner, struct ck__gc_node *dep)
{
    for (size_t i = 0; i < owner->n_deps; i++)
        if (owner->deps[i] == dep)
            return 0;
    if (owner->n_deps == owner->cap_deps) {
        size_t cap = owner->cap_deps ? owner->cap_deps * 2 : 4;
        struct ck__gc_node **grown = ck__realloc(owner->deps, cap * sizeof(*grown));
        if (!grown)
            return CK_ENOMEM;
        owner->deps = grown;
        owner->cap_deps = cap;
    }
    owner->deps[owner->n_deps++] = dep;
    return 0;
}

void ck__gc_node_remove_dependent(struct ck__gc_node *owner, const struct ck__gc_node *dep)
{
    for (size_t i = 0; i < owner->n_deps; i++)
        if (owner->deps[i] == dep) {
            owner->deps[i] = owner->deps[--owner->n_deps];
            return;
        }
}

void ck__gc_graph_remove(struct ck__strmap *g, struct ck__gc_node *n)
{
    for (size_t i = 0; i < n->n_owners; i++) {
        struct ck__gc_node *owner = ck__gc_graph_get(g, n->owners[i].uid);
        if (owner)
            ck__gc_node_remove_dependent(owner, n);
    }
    ck__strmap_remove(g, n->id.uid);
    ck__gc_node_free(n);
}

void ck__gc_graph_release(struct ck__strmap *g)
{
    size_t b = 0;
    for (struct ck__strmap_entry *e = ck__strmap_next(g, NULL, &b); e;
         e = ck__strmap_next(g, e, &b))
        ck__gc_node_free(e->value);
    ck__strmap_release(g);
}

bool ck__gc_has_finalizer(const json_t *obj, const char *finalizer)
{
    size_t i;
    const json_t *f;
    json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "finalizers"), i, f)
    {
        if (json_is_string(f) && strcmp(json_string_value(f), finalizer) == 0)
            return true;
    }
    return false;
}
