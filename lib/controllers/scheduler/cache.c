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
 * A pod whose preemption made room on a node is nominated there (the nominator of
 * pkg/scheduler/backend/queue): until it is bound, deleted or placed, it counts on that
 * node for the pods of a lower or equal priority, so they do not take the room its
 * victims leave.
 *
 * Threading: c->lock guards every field; the functions named _locked expect the caller
 * to hold it (the scheduling cycle), the others take it.
 *
 * Tested by tests/controllers/test_scheduler_cache.c.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct nominated {
    char *node;
    struct ck__sched_pod info; /* its summary (info.pod and owner_uid are not kept) */
};

static void nominated_free(struct nominated *n)
{
    if (!n)
        return;
    free(n->node);
    ck__sched_pod_release(&n->info);
    free(n);
}

/* Forgets key's nomination (cache locked). */
static void unnominate(struct ck__sched_cache *c, const char *key)
{
    nominated_free(ck__strmap_remove(&c->nominated, key));
}

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
    for (struct ck__strmap_entry *e = ck__strmap_next(&c->nominated, NULL, &i); e;
         e = ck__strmap_next(&c->nominated, e, &i))
        nominated_free(e->value);
    ck__strmap_release(&c->nominated);
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

/*
 * dst = src with its own copy of the ports, without the volumes' affinity (owner_uid
 * still borrowed). 0 or CK_ENOMEM.
 */
static int copy_summary(struct ck__sched_pod *dst, const struct ck__sched_pod *src)
{
    *dst = *src;
    dst->ports = NULL;
    dst->n_ports = 0;
    dst->volume_affinity = NULL; /* a filter's input: placed and nominated pods need none */
    if (!src->n_ports)
        return 0;
    dst->ports = malloc(src->n_ports * sizeof(*src->ports));
    if (!dst->ports)
        return CK_ENOMEM;
    memcpy(dst->ports, src->ports, src->n_ports * sizeof(*src->ports));
    dst->n_ports = src->n_ports;
    return 0;
}

/* A new placement of the pod summarised from pod on node (cache locked). */
static int place(struct ck__sched_cache *c, const char *key, const json_t *pod,
                 const struct ck__sched_pod *given, const char *node, bool assumed)
{
    struct placed_pod *pp = calloc(1, sizeof(*pp));
    if (!pp)
        return CK_ENOMEM;
    int r = given ? copy_summary(&pp->info, given) : ck__sched_pod_init(&pp->info, pod);
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
    if (node && *node)
        unnominate(c, key); /* bound: the room is its own now */
    if (!node || !*node || terminated(pod)) {
        drop(c, key);
    } else if (pp && strcmp(pp->node, node) == 0) {
        pp->assumed = false; /* confirmed; an update never changes a bound pod's requests */
        ck__sched_pod_refresh(&pp->info, pod);
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
    unnominate(c, key);
    bool counted = drop(c, key);
    pthread_mutex_unlock(&c->lock);
    return counted;
}

int ck__sched_cache_assume_locked(struct ck__sched_cache *c, const char *key,
                                  const struct ck__sched_pod *p, const char *node)
{
    unnominate(c, key);
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

size_t ck__sched_cache_pods_on_locked(struct ck__sched_cache *c, const char *name,
                                      struct ck__sched_placed *ret, size_t cap)
{
    size_t i = 0, n = 0;
    for (struct ck__strmap_entry *e = ck__strmap_next(&c->pods, NULL, &i); e;
         e = ck__strmap_next(&c->pods, e, &i)) {
        struct placed_pod *pp = e->value;
        if (!pp->counted || strcmp(pp->node, name) != 0)
            continue;
        if (n < cap) {
            const char *slash = strchr(e->key, '/');
            ret[n] = (struct ck__sched_placed){
                .key = e->key, .name = slash ? slash + 1 : e->key, .info = &pp->info};
        }
        n++;
    }
    return n;
}

int ck__sched_cache_nominate_locked(struct ck__sched_cache *c, const char *key,
                                    const struct ck__sched_pod *p, const char *node)
{
    unnominate(c, key);
    struct nominated *nom = calloc(1, sizeof(*nom));
    if (!nom || copy_summary(&nom->info, p) < 0) {
        free(nom);
        return CK_ENOMEM;
    }
    nom->info.pod = NULL;
    nom->info.owner_uid = NULL;
    nom->node = strdup(node);
    bool created = false;
    if (!nom->node || !ck__strmap_put(&c->nominated, key, nom, &created)) {
        nominated_free(nom);
        return CK_ENOMEM;
    }
    return 0;
}

const char *ck__sched_cache_nominated_node_locked(struct ck__sched_cache *c, const char *key)
{
    struct ck__strmap_entry *e = ck__strmap_find(&c->nominated, key);
    return e ? ((struct nominated *)e->value)->node : NULL;
}

const struct ck__sched_node *ck__sched_cache_with_nominated_locked(struct ck__sched_cache *c,
                                                                   const struct ck__sched_node *n,
                                                                   const char *key,
                                                                   const struct ck__sched_pod *p,
                                                                   struct ck__sched_node *scratch)
{
    if (!c->nominated.len)
        return n;
    bool copied = false;
    size_t i = 0;
    for (struct ck__strmap_entry *e = ck__strmap_next(&c->nominated, NULL, &i); e;
         e = ck__strmap_next(&c->nominated, e, &i)) {
        struct nominated *nom = e->value;
        if (strcmp(nom->node, n->name) != 0 || strcmp(e->key, key) == 0 ||
            nom->info.priority < p->priority)
            continue;
        if (!copied && ck__sched_node_copy(scratch, n) < 0)
            return NULL;
        copied = true;
        if (ck__sched_node_account(scratch, &nom->info, +1) < 0) {
            ck__sched_node_release(scratch);
            return NULL;
        }
    }
    return copied ? scratch : n;
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
