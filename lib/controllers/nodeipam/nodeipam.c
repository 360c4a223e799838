/*
 * nodeipam.c - the node IPAM controller: a pod range for every Node (see
 * ckube/nodeipam.h for what it keeps).
 *
 * Mirrors kubernetes pkg/controller/nodeipam (node_ipam_controller.go and the range
 * allocator, ipam/range_allocator.go): the blocks of the cluster CIDR live in one CIDR
 * set (cidr_set.c); a Node's key is synced when it is added, when an update shows it
 * without podCIDRs, and its blocks are released when it is deleted. Before the workers
 * start, every Node in the cache that has podCIDRs marks its blocks used, so a restarted
 * controller (or one that took over the leader lease) never gives a block twice.
 *
 * Reservations: a block handed to a Node is remembered under its name until the cache
 * shows the Node with podCIDRs (or the Node is deleted). Kubernetes marks a Node "in
 * processing" for the same reason; remembering the block as well means a sync that sees
 * a stale Node (the patch went through, the watch has not shown it yet) patches the same
 * block again instead of taking a second one, and a failed patch is retried with the same
 * block rather than leaking it.
 *
 * The patch is Kubernetes' PatchNodeCIDRs: a strategic merge patch of spec.podCIDR and
 * spec.podCIDRs. A full range records a Normal event CIDRNotAvailable on the Node
 * ("Node x status is now: CIDRNotAvailable", nodeutil.RecordNodeStatusChange) and the key
 * is retried with backoff. The range allocator sets no Node condition (NetworkUnavailable
 * belongs to cloud route controllers).
 *
 * Threading: the runner's workers call sync (one per key at a time); informer threads
 * enqueue and call node_deleted. `lock` guards the set and the reservations.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "ckube/internal/util.h"
#include "ckube/nodeipam.h"

struct ck_nodeipam {
    struct ck_nodeipam_config config;
    char *cluster_cidr;
    const struct ck_resource *nodes_res;
    pthread_mutex_t lock;
    struct ck_cidr_set *set;       /* under lock */
    struct ck__strmap reserved;    /* node name -> its block (char *, owned); under lock */
    struct ck_controller ctl;      /* the queue and sync for the runner */
    struct ck_runner *runner;      /* while running */
    struct ck_informer *nodes_inf; /* the controller manager's row only */
    struct ck_ctl_event_sink sink;
    struct ck_event_recorder *recorder;
};

/* The Node's podCIDRs (an array), or its podCIDR alone, as a new array; NULL: none. */
static json_t *node_cidrs(const json_t *node)
{
    const json_t *spec = json_object_get(node, "spec");
    const json_t *list = json_object_get(spec, "podCIDRs");
    if (json_array_size(list) > 0)
        return json_incref((json_t *)list);
    const char *one = json_string_value(json_object_get(spec, "podCIDR"));
    return one && *one ? json_pack("[s]", one) : NULL;
}

static const char *node_name(const json_t *node)
{
    return json_string_value(json_object_get(json_object_get(node, "metadata"), "name"));
}

/* Marks node's blocks used (lock held). Blocks outside the range are logged and skipped. */
static void occupy_locked(struct ck_nodeipam *c, const json_t *node, const json_t *cidrs)
{
    size_t i;
    const json_t *v;
    json_array_foreach(cidrs, i, v)
    {
        struct ck_err err = {0};
        const char *cidr = json_string_value(v);
        if (i > 0) /* a second family: dual-stack is not allocated here */
            break;
        if (ck_cidr_set_occupy(c->set, cidr ? cidr : "", &err) < 0)
            CK_LOGV(1, "nodeipam: node %s keeps podCIDR %s, not in the allocator's range: %s",
                    node_name(node), cidr ? cidr : "", err.msg);
    }
}

/* Forgets the reservation for name (lock held); releases its block unless keep says so. */
static void drop_reservation_locked(struct ck_nodeipam *c, const char *name, const json_t *keep)
{
    char *block = ck__strmap_remove(&c->reserved, name);
    if (!block)
        return;
    bool kept = false;
    size_t i;
    const json_t *v;
    json_array_foreach(keep, i, v) kept =
        kept || (json_string_value(v) && strcmp(json_string_value(v), block) == 0);
    if (!kept)
        ck_cidr_set_release(c->set, block, NULL);
    free(block);
}

int ck_nodeipam_occupy_existing(struct ck_nodeipam *c)
{
    struct ck_obj_list nodes = {0};
    if (ck_lister_list(&c->config.nodes, NULL, NULL, &nodes, NULL) < 0)
        return 0;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < nodes.n; i++) {
        json_t *cidrs = node_cidrs(nodes.items[i]);
        if (cidrs)
            occupy_locked(c, nodes.items[i], cidrs);
        json_decref(cidrs);
    }
    pthread_mutex_unlock(&c->lock);
    ck_obj_list_release(&nodes);
    return 0;
}

/* The block for name: the one reserved, else the next free one. 0 or CK_ENOENT (full). */
static int reserve(struct ck_nodeipam *c, const char *name, char *block, size_t size,
                   struct ck_err *reterr)
{
    pthread_mutex_lock(&c->lock);
    struct ck__strmap_entry *e = ck__strmap_find(&c->reserved, name);
    int r = 0;
    if (e) {
        snprintf(block, size, "%s", (const char *)e->value);
    } else if (ck_cidr_set_allocate_next(c->set, block, size) < 0) {
        r = ck_err_set(reterr, CK_ENOENT,
                       "failed to allocate cidr from cluster cidr %s: CIDR allocation failed; "
                       "there are no remaining CIDRs left to allocate in the accepted range",
                       c->cluster_cidr);
    } else {
        char *copy = strdup(block);
        bool created = false;
        if (!copy || !ck__strmap_put(&c->reserved, name, copy, &created)) {
            ck_cidr_set_release(c->set, block, NULL);
            free(copy);
            r = ck_err_no_memory(reterr);
        }
    }
    pthread_mutex_unlock(&c->lock);
    return r;
}

int ck_nodeipam_sync(struct ck_nodeipam *c, const char *name, struct ck_err *reterr)
{
    const json_t *node = NULL;
    if (ck_lister_get(&c->config.nodes, "", name, &node) < 0)
        return 0; /* gone: its delete event released its blocks */
    json_t *cidrs = node_cidrs(node);
    if (cidrs) {
        pthread_mutex_lock(&c->lock);
        occupy_locked(c, node, cidrs);
        drop_reservation_locked(c, name, cidrs);
        pthread_mutex_unlock(&c->lock);
        json_decref(cidrs);
        ck_cached_unref(node);
        return 0;
    }
    char block[32];
    int r = reserve(c, name, block, sizeof(block), reterr);
    if (r == CK_ENOENT) {
        ck_event_recordf(c->recorder, node, CK_EVENT_NORMAL, "CIDRNotAvailable",
                         "Node %s status is now: CIDRNotAvailable", name);
    } else if (r == 0) {
        json_t *patch = json_pack("{s:{s:s, s:[s]}}", "spec", "podCIDR", block, "podCIDRs", block);
        r = patch ? ck_ctl_patch(&c->config.client, c->nodes_res, "", name, NULL,
                                 CK_PATCH_STRATEGIC, patch, NULL, reterr)
                  : ck_err_no_memory(reterr);
        json_decref(patch);
        if (r == 0) {
            CK_LOGS(0, "Set node PodCIDR", "node", name, "podCIDRs", block);
        } else if (r == CK_ENOENT) { /* deleted meanwhile: the block is free again */
            pthread_mutex_lock(&c->lock);
            drop_reservation_locked(c, name, NULL);
            pthread_mutex_unlock(&c->lock);
            r = 0;
        }
    }
    ck_cached_unref(node);
    return r;
}

void ck_nodeipam_node_deleted(struct ck_nodeipam *c, const json_t *node)
{
    const char *name = node_name(node);
    json_t *cidrs = node_cidrs(node);
    pthread_mutex_lock(&c->lock);
    size_t i;
    const json_t *v;
    json_array_foreach(cidrs, i, v)
    {
        if (i == 0 && json_string_value(v))
            ck_cidr_set_release(c->set, json_string_value(v), NULL);
    }
    if (name)
        drop_reservation_locked(c, name, NULL);
    pthread_mutex_unlock(&c->lock);
    json_decref(cidrs);
}

void ck_nodeipam_usage(struct ck_nodeipam *c, size_t *ret_used, size_t *ret_size)
{
    pthread_mutex_lock(&c->lock);
    *ret_used = ck_cidr_set_used(c->set);
    *ret_size = ck_cidr_set_size(c->set);
    pthread_mutex_unlock(&c->lock);
}

/* ---- lifecycle ------------------------------------------------------------------------- */

static int sync_key(struct ck_controller *ctl, const char *key, struct ck_err *reterr)
{
    return ck_nodeipam_sync(ctl->data, key, reterr);
}

int ck_nodeipam_new(const struct ck_nodeipam_config *config, struct ck_nodeipam **ret,
                    struct ck_err *reterr)
{
    struct ck_nodeipam *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_no_memory(reterr);
    c->config = *config;
    pthread_mutex_init(&c->lock, NULL);
    c->cluster_cidr =
        strdup(config->cluster_cidr ? config->cluster_cidr : CK_NODEIPAM_CLUSTER_CIDR);
    int mask = config->node_mask_size > 0 ? config->node_mask_size : CK_NODEIPAM_NODE_MASK_SIZE;
    c->nodes_res = ck_controller_resource("", "v1", "nodes");
    int r = !c->cluster_cidr ? ck_err_no_memory(reterr)
            : !c->nodes_res  ? ck_err_set(reterr, CK_ENOENT, "nodeipam: no kind serves nodes")
                             : ck_cidr_set_new(c->cluster_cidr, mask, &c->set, reterr);
    if (r == 0)
        r = ck__ctl_init(&c->ctl, "nodeipam", sync_key, c, config->clock, reterr);
    if (r == 0)
        r = ck__ctl_recorder(&c->sink, &c->config.client, "cidrAllocator", config->clock,
                             config->synchronous_events, &c->recorder, reterr);
    if (r < 0) {
        ck_nodeipam_free(c);
        return r;
    }
    *ret = c;
    return 0;
}

struct ck_nodeipam *ck_nodeipam_free(struct ck_nodeipam *c)
{
    if (!c)
        return NULL;
    if (c->ctl.queue)
        ck__ctl_stop(&c->ctl, c->runner);
    ck_event_recorder_free(c->recorder);
    for (size_t i = 0; i < c->reserved.nbuckets; i++)
        for (struct ck__strmap_entry *e = c->reserved.buckets[i]; e; e = e->next)
            free(e->value);
    ck__strmap_release(&c->reserved);
    ck_cidr_set_free(c->set);
    pthread_mutex_destroy(&c->lock);
    free(c->cluster_cidr);
    free(c);
    return NULL;
}

/* ---- the controller manager's row ----------------------------------------------------------- */

static void on_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    ck__ctl_enqueue(((struct ck_nodeipam *)arg)->ctl.queue, obj);
}

static void on_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old;
    json_t *cidrs = node_cidrs(obj);
    if (!cidrs) /* heartbeats of a Node that has its range change nothing here */
        ck__ctl_enqueue(((struct ck_nodeipam *)arg)->ctl.queue, obj);
    json_decref(cidrs);
}

static void on_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    (void)t;
    if (obj)
        ck_nodeipam_node_deleted(arg, obj);
}

int ck_nodeipam_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                              struct ck_err *reterr)
{
    struct ck_nodeipam_config config = {.cluster_cidr = ctx->cluster_cidr,
                                        .node_mask_size = ctx->node_cidr_mask_size};
    ck_ctl_client_init_rest(&config.client, ctx->client);
    struct ck_nodeipam *c = NULL;
    int r = ck_nodeipam_new(&config, &c, reterr);
    struct ck_event_handler h = {on_add, on_update, on_delete, c};
    if (r == 0)
        r = ck__ctl_watch(ctx->factory, c->nodes_res, &h, &c->nodes_inf, &c->config.nodes, reterr);
    if (r < 0) {
        ck_nodeipam_free(c);
        return r;
    }
    *ret_state = c;
    return 0;
}

int ck_nodeipam_manager_run(void *state, int workers, struct ck_err *reterr)
{
    struct ck_nodeipam *c = state;
    if (!ck_informer_wait_for_sync(c->nodes_inf, CK_TIME_NEVER))
        return ck_err_set(reterr, CK_ESHUTDOWN, "nodeipam: informers stopped before syncing");
    ck_nodeipam_occupy_existing(c);
    size_t used, size;
    ck_nodeipam_usage(c, &used, &size);
    CK_LOGS(0, "Starting range CIDR allocator", "clusterCIDR", c->cluster_cidr);
    CK_LOGV(2, "nodeipam: %zu of %zu blocks in use", used, size);
    return ck_runner_start(&c->ctl, workers > 0 ? workers : 1, &c->runner, reterr);
}

void ck_nodeipam_manager_stop(void *state)
{
    ck_nodeipam_free(state);
}
