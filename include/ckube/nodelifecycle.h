/*
 * ckube/nodelifecycle.h - the node lifecycle controller (kube-controller-manager's
 * nodelifecycle with its taint-based eviction).
 *
 * A node whose Lease in kube-node-lease is not renewed within the grace period gets its
 * conditions set to Unknown, the node.kubernetes.io/unreachable taint with NoSchedule
 * and NoExecute, and its pods are deleted once their toleration of that taint runs out
 * (300 s by default: the API server adds the toleration at pod create). A node whose
 * Ready condition is False gets the not-ready taints instead; a node that is Ready again
 * loses them; a cordoned node carries node.kubernetes.io/unschedulable:NoSchedule.
 * docs/internals/controllers.md describes it.
 */
#ifndef CKUBE_NODELIFECYCLE_H
#define CKUBE_NODELIFECYCLE_H

#include "ckube/controllers.h"
#include "ckube/manager.h"

/* --node-monitor-grace-period and --node-monitor-period defaults. */
#define CK_NODE_MONITOR_GRACE_PERIOD (40 * CK_SEC)
#define CK_NODE_MONITOR_PERIOD       (5 * CK_SEC)

struct ck_nodelifecycle_config {
    struct ck_ctl_client client;  /* writes: node status and taints, pod deletions, events */
    struct ck_lister nodes, pods; /* reads, from informer caches */
    struct ck_clock *clock;       /* NULL: real (probe times are on it) */
    int64_t grace_period;         /* 0: CK_NODE_MONITOR_GRACE_PERIOD */
    int64_t period;               /* 0: CK_NODE_MONITOR_PERIOD */
};

struct ck_nodelifecycle;

int ck_nodelifecycle_new(const struct ck_nodelifecycle_config *config,
                         struct ck_nodelifecycle **ret, struct ck_err *reterr);
struct ck_nodelifecycle *ck_nodelifecycle_free(struct ck_nodelifecycle *c);

/* Handlers' work: a node was seen, or a lease in kube-node-lease (renewals count). */
void ck_nodelifecycle_observe_node(struct ck_nodelifecycle *c, const json_t *node);
void ck_nodelifecycle_observe_lease(struct ck_nodelifecycle *c, const json_t *lease);

/*
 * One pass (monitorNodeHealth, then the taint manager): conditions to Unknown where the
 * grace period passed, taints to match the Ready condition, pods evicted whose
 * toleration ran out. wall_now is the wall clock in seconds (taints' timeAdded).
 * Returns 0, or the first error (the pass goes on past it).
 */
int ck_nodelifecycle_monitor(struct ck_nodelifecycle *c, int64_t wall_now, struct ck_err *reterr);

/* Runs passes every period on a thread of its own until freed. 0 or CK_ENOMEM. */
int ck_nodelifecycle_start(struct ck_nodelifecycle *c, struct ck_err *reterr);

/* The controller manager's row. */
int ck_nodelifecycle_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                                   struct ck_err *reterr);
int ck_nodelifecycle_manager_run(void *state, int workers, struct ck_err *reterr);
void ck_nodelifecycle_manager_stop(void *state);

/* ---- the decisions, exposed for their tests ---------------------------------------------- */

/*
 * The taints node should carry now: its own, minus the ones this controller manages,
 * plus those its Ready condition and spec.unschedulable call for (a NoExecute one keeps
 * its timeAdded if it had it, else gets now_rfc3339). New reference, NULL on no memory.
 */
json_t *ck_nodelifecycle_desired_taints(const json_t *node, const char *now_rfc3339);

/*
 * When pod must go because of the NoExecute taints (a JSON array): -1 never (every
 * taint tolerated for ever, or no NoExecute taint), else the wall time in seconds: now
 * for an untolerated taint, else the taint's timeAdded plus the smallest
 * tolerationSeconds among the tolerations that match it.
 */
int64_t ck_nodelifecycle_eviction_time(const json_t *pod, const json_t *taints, int64_t wall_now);

#endif /* CKUBE_NODELIFECYCLE_H */
