/*
 * ckube/nodeipam.h - the node IPAM controller (kube-controller-manager's
 * node-ipam-controller with its range allocator, kubernetes
 * pkg/controller/nodeipam/ipam/range_allocator.go and cidrset/cidr_set.go).
 *
 * Every Node without spec.podCIDRs gets the next free block of --node-cidr-mask-size
 * bits from --cluster-cidr, written as spec.podCIDR and spec.podCIDRs (one patch, as
 * Kubernetes' PatchNodeCIDRs). A Node that already has one keeps it, and its block is
 * marked used (at start for every Node in the cache, so a restarted controller never
 * hands out a block twice); a deleted Node's block is released. When the range is full
 * the Node gets a Normal event CIDRNotAvailable and its key is retried with backoff.
 * IPv4 only. docs/internals/controllers.md describes it.
 */
#ifndef CKUBE_NODEIPAM_H
#define CKUBE_NODEIPAM_H

#include <stdbool.h>
#include <stdint.h>

#include "ckube/controllers.h"
#include "ckube/manager.h"

/* ckube's defaults of --cluster-cidr and --node-cidr-mask-size (kube-controller-manager has
 * no default cluster CIDR and allocates nothing unless --allocate-node-cidrs). */
#define CK_NODEIPAM_CLUSTER_CIDR   "10.244.0.0/16"
#define CK_NODEIPAM_NODE_MASK_SIZE 24

/* ---- the CIDR set (cidrset.CidrSet), IPv4 ---------------------------------------------- */

/*
 * The blocks of one cluster CIDR: a bitmap of used blocks and the next candidate, as
 * cidrset: the search for a free block starts after the one handed out last and wraps
 * around, so a released block is not reused at once. Not thread-safe: its owner locks.
 */
struct ck_cidr_set;

/*
 * A set over cluster_cidr ("10.244.0.0/16") cut into blocks of node_mask bits. 0, or
 * CK_EINVAL with words (not an IPv4 CIDR; a node mask shorter than the cluster's or
 * longer than 32; more than 2^16 blocks, cidrset's limit) or CK_ENOMEM.
 */
int ck_cidr_set_new(const char *cluster_cidr, int node_mask, struct ck_cidr_set **ret,
                    struct ck_err *reterr);
struct ck_cidr_set *ck_cidr_set_free(struct ck_cidr_set *s);

/* Blocks in the set, and blocks used. */
size_t ck_cidr_set_size(const struct ck_cidr_set *s);
size_t ck_cidr_set_used(const struct ck_cidr_set *s);

/*
 * AllocateNext: marks the next free block used and writes it ("10.244.3.0/24") into
 * buf[size] (32 bytes hold any). 0, or CK_ENOENT when every block is used.
 */
int ck_cidr_set_allocate_next(struct ck_cidr_set *s, char *buf, size_t size);

/*
 * Occupy / Release: marks every block cidr overlaps used / free (either may have been
 * so already). 0, or CK_EINVAL with words when cidr is not an IPv4 CIDR or lies outside
 * the cluster CIDR.
 */
int ck_cidr_set_occupy(struct ck_cidr_set *s, const char *cidr, struct ck_err *reterr);
int ck_cidr_set_release(struct ck_cidr_set *s, const char *cidr, struct ck_err *reterr);

/* ---- the controller ---------------------------------------------------------------------- */

struct ck_nodeipam_config {
    struct ck_ctl_client client; /* writes: node patches, events */
    struct ck_lister nodes;      /* reads, from the nodes informer's cache */
    const char *cluster_cidr;    /* NULL: CK_NODEIPAM_CLUSTER_CIDR (copied) */
    int node_mask_size;          /* 0: CK_NODEIPAM_NODE_MASK_SIZE */
    struct ck_clock *clock;      /* NULL: real (the queue's backoff) */
    bool synchronous_events;     /* unit tests: events written before recording returns */
};

struct ck_nodeipam;

/*
 * Validates the flags as kube-controller-manager does (the cluster CIDR's mask no longer
 * than the node mask) and makes the controller. 0, CK_EINVAL with words, CK_ENOENT (no
 * kind serves nodes) or CK_ENOMEM.
 */
int ck_nodeipam_new(const struct ck_nodeipam_config *config, struct ck_nodeipam **ret,
                    struct ck_err *reterr);
/* Stops the workers (if running) and frees the controller. */
struct ck_nodeipam *ck_nodeipam_free(struct ck_nodeipam *c);

/*
 * Marks the blocks of every Node in the cache that has podCIDRs used (the allocator's
 * start over the node list). A Node whose podCIDR is malformed or outside the cluster
 * CIDR is left alone and logged (Kubernetes refuses to start instead). Returns 0.
 */
int ck_nodeipam_occupy_existing(struct ck_nodeipam *c);

/*
 * One sync of a Node (its name is the key): a Node with podCIDRs has its blocks marked
 * used; one without gets the block reserved for it before (a patch whose answer the
 * cache has not shown yet), or the next free one, patched onto it. 0, or an error to
 * retry (CK_ENOENT: the range is full; the patch's error).
 */
int ck_nodeipam_sync(struct ck_nodeipam *c, const char *name, struct ck_err *reterr);

/* A Node was deleted: its blocks (and any reserved for it) are free again. */
void ck_nodeipam_node_deleted(struct ck_nodeipam *c, const json_t *node);

/* The set's counts, for tests and logs. */
void ck_nodeipam_usage(struct ck_nodeipam *c, size_t *ret_used, size_t *ret_size);

/* The controller manager's row ("nodeipam"). */
int ck_nodeipam_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                              struct ck_err *reterr);
int ck_nodeipam_manager_run(void *state, int workers, struct ck_err *reterr);
void ck_nodeipam_manager_stop(void *state);

#endif /* CKUBE_NODEIPAM_H */
