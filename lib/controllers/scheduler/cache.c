/*
 * cache.c - the scheduler's view of the nodes and of what is placed on them.
 *
 * Mirrors pkg/scheduler/backend/cache of Kubernetes 1.32: a pod the scheduler
 * assumed on a node counts there at once, so that the next pods see the room it takes
 * before its binding comes back through the informer; when the bound pod is seen it
 * is confirmed (counted once); when its binding fails it is forgotten. Pods bound to
 * a node the cache does not know yet wait for it and count when it appears. Terminated
 * pods (Succeeded, Failed) take no room, as the scheduler's informer never lists them.
 *
 * Each placed pod keeps the summary it was counted with, so that removing it
 * subtracts exactly what adding it added, whatever the pod looks like by then.
 *
 * Threading: c->lock guards every field; the functions named _locked expect the caller
 * to hold it (the scheduling cycle), the others take it.
 *
 * Tested by tests/controllers/test_scheduler_cache.c.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct placed_pod {
    char *node;                /* where it counts */
    struct ck__sched_pod info; /* its summary (info.pod is not kept: NULL) */
    char *owner_uid;           /* info.owner_uid points here */
    bool assumed;              /* placed by us, binding not seen yet */
    bool counted;              /* its node is known and counts it */
};

int ck__sched_cache_init(struct ck__sched_cache *c)
{
    memset(c, 0, sizeof(*c));
    return pthread_mutex_init(&c->lock, NULL) == 0 ? 0 : CK_ENOMEM;
}

static void placed_free(struct placed_pod *pp)
{
    if (!pp)
        return;
    free(pp->node);
    free(pp->owner_uid);
    ck__sched_pod_release(&pp->info);
    free(pp);
}

void ck__sched_cache_release(struct ck__sched_cache *c)
{
    size_t i = 0;
    for (struct ck__strmap_entry *e = ck__strmap_next(&c->pods, NULL, &i); e;
         e = ck__strmap_next(&c->pods, e, &i))
        placed_free(e->value);
    ck__strmap_release(&c->pods);
    i = 0;
    for (struct ck__strmap_entry *e = ck__strmap_next(&c->nodes, NULL, &i); e;
         e = ck__strmap_next(&c->nodes, e, &i)) {
        ck__sched_node_release(e->value);
        free(e->value);
    }
    ck__strmap_release(&c->nodes);
    free(c->order);
    pthread_mutex_destroy(&c->lock);
}

static struct ck__sched_node *node_of(struct ck__sched_cache *c, const char *name)
{
    struct ck__strmap_entry *e = name ? ck__strmap_find(&c->nodes, name) : NULL;
    return e ? e->value : NULL;
}

/* Counts (or uncounts) pp on its node when the node is known. */
static int count(struct ck__sched_cache *c, struct placed_pod *pp, int sign)
{
    struct ck__sched_node *n = node_of(c, pp->node);
    if (!n || pp->counted == (sign > 0))
        return 0;
    int r = ck__sched_node_account(n, &pp->info, sign);
    if (r == 0)
        pp->counted = sign > 0;
    return r;
}

int ck__sched_cache_set_node(struct ck__sched_cache *c, const json_t *node)
{
    const char *name =
        json_string_value(json_object_get(json_object_get(node, "metadata"), "name"));
    if (!name)
        return 0;
    pthread_mutex_lock(&c->lock);
    int r = 0;
    struct ck__sched_node *n = node_of(c, name);
    bool created = false;
    if (!n) {
        n = calloc(1, sizeof(*n));
        char *copy = n ? strdup(name) : NULL;
        if (!copy || !ck__strmap_put(&c->nodes, name, n, &created)) {
            free(copy);
            free(n);
            r = CK_ENOMEM;
            goto out;
        }
        n->name = copy;
        c->order_stale = true;
    }
    ck__sched_node_set(n, node);
    if (created) { /* pods bound before the node was seen */
        size_t i = 0;
        for (struct ck__strmap_entry *e = ck__strmap_next(&c->pods, NULL, &i); e && r == 0;
             e = ck__strmap_next(&c->pods, e, &i)) {
            struct placed_pod *pp = e->value;
            if (strcmp(pp->node, name) == 0)
                r = count(c, pp, +1);
        }
    }
out:
    pthread_mutex_unlock(&c->lock);
    return r;
}

void ck__sched_cache_remove_node(struct ck__sched_cache *c, const char *name)
{
    pthread_mutex_lock(&c->lock);
    struct ck__sched_node *n = ck__strmap_remove(&c->nodes, name);
    if (n) {
        size_t i = 0;
        for (struct ck__strmap_entry *e = ck__strmap_next(&c->pods, NULL, &i); e;
             e = ck__strmap_next(&c->pods, e, &i)) {
            struct placed_pod *pp = e->value;
            if (strcmp(pp->node, name) == 0)
                pp->counted = false;
        }
        ck__sched_node_release(n);
        free(n);
        c->order_stale = true;
    }
    pthread_mutex_unlock(&c->lock);
}

static bool terminated(const json_t *pod)
{
    const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    return phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
}

/* Drops key's placement (cache locked). Returns true when it counted somewhere. */
static bool drop(struct ck__sched_cache *c, const char *key)
{
    struct placed_pod *pp = ck__strmap_remove(&c->pods, key);
    bool counted = pp && pp->counted;
    if (pp)
        count(c, pp, -1);
    placed_free(pp);
    return counted;
}

/* A new placement of the pod summarised from pod on node (cache locked). */
static int place(struct ck__sched_cache *c, const char *key, const json_t *pod,
                 const struct ck__sched_pod *given, const char *node, bool assumed)
{
    struct placed_pod *pp = calloc(1, sizeof(*pp));
    if (!pp)
        return CK_ENOMEM;
    int r = given ? 0 : ck__sched_pod_init(&pp->info, pod);
    if (given) {
        pp->info = *given;
        pp->info.ports = NULL;
        pp->info.n_ports = 0;
        if (given->n_ports) {
            pp->info.ports = malloc(given->n_ports * sizeof(*given->ports));
            if (pp->info.ports) {
                memcpy(pp->info.ports, given->ports, given->n_ports * sizeof(*given->ports));
                pp->info.n_ports = given->n_ports;
            } else {
                r = CK_ENOMEM;
            }
        }
    }
    pp->info.pod = NULL;
    pp->node = r == 0 ? strdup(node) : NULL;
    if (r == 0 && pp->info.owner_uid) {
        pp->owner_uid = strdup(pp->info.owner_uid);
        pp->info.owner_uid = pp->owner_uid;
        if (!pp->owner_uid)
            r = CK_ENOMEM;
    }
    bool created = false;
    if (r < 0 || !pp->node || !ck__strmap_put(&c->pods, key, pp, &created)) {
        placed_free(pp);
        return CK_ENOMEM;
    }
    pp->assumed = assumed;
    return count(c, pp, +1);
}

int ck__sched_cache_set_pod(struct ck__sched_cache *c, const char *key, const json_t *pod)
{
    const char *node = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
    pthread_mutex_lock(&c->lock);
    int r = 0;
    struct ck__strmap_entry *e = ck__strmap_find(&c->pods, key);
    struct placed_pod *pp = e ? e->value : NULL;
    if (!node || !*node || terminated(pod)) {
        drop(c, key);
    } else if (pp && strcmp(pp->node, node) == 0) {
        pp->assumed = false; /* confirmed; an update never changes a bound pod's requests */
    } else {
        drop(c, key);
        r = place(c, key, pod, NULL, node, false);
    }
    pthread_mutex_unlock(&c->lock);
    return r;
}

bool ck__sched_cache_remove_pod(struct ck__sched_cache *c, const char *key)
{
    pthread_mutex_lock(&c->lock);
    bool counted = drop(c, key);
    pthread_mutex_unlock(&c->lock);
    return counted;
}

int ck__sched_cache_assume_locked(struct ck__sched_cache *c, const char *key,
                                  const struct ck__sched_pod *p, const char *node)
{
    drop(c, key);
    return place(c, key, NULL, p, node, true);
}

void ck__sched_cache_forget(struct ck__sched_cache *c, const char *key)
{
    pthread_mutex_lock(&c->lock);
    struct ck__strmap_entry *e = ck__strmap_find(&c->pods, key);
    struct placed_pod *pp = e ? e->value : NULL;
    if (pp && pp->assumed)
        drop(c, key);
    pthread_mutex_unlock(&c->lock);
}

static int cmp_node(const void *a, const void *b)
{
    return strcmp((*(struct ck__sched_node *const *)a)->name,
                  (*(struct ck__sched_node *const *)b)->name);
}

struct ck__sched_node *const *ck__sched_cache_nodes_locked(struct ck__sched_cache *c, size_t *ret_n)
{
    if (c->order_stale) {
        struct ck__sched_node **order = c->nodes.len ? malloc(c->nodes.len * sizeof(*order)) : NULL;
        if (!order && c->nodes.len) { /* out of memory: no node this cycle */
            *ret_n = 0;
            return NULL;
        }
        {
            size_t i = 0, n = 0;
            for (struct ck__strmap_entry *e = ck__strmap_next(&c->nodes, NULL, &i); e;
                 e = ck__strmap_next(&c->nodes, e, &i))
                order[n++] = e->value;
            if (n)
                qsort(order, n, sizeof(*order), cmp_node);
            free(c->order);
            c->order = order;
            c->n_order = n;
            c->order_stale = false;
        }
    }
    *ret_n = c->n_order;
    return c->order;
}
