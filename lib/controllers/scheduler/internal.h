/*
 * internal.h - private to the scheduler (lib/controllers/scheduler/), never installed.
 *
 * Three parts, each in its own file and each tested on its own:
 *
 * - plugins.c: what kube-scheduler's default profile decides, as pure functions over a
 *   pod's and a node's summaries: the filters NodeUnschedulable, NodeName, TaintToleration,
 *   NodeAffinity (node selector and required node affinity), NodePorts and
 *   NodeResourcesFit, each with Kubernetes' reasons; the scores least-allocated,
 *   balanced allocation and owner spreading; and FitError's message. The taint,
 *   toleration and node affinity predicates under TaintToleration, NodeUnschedulable
 *   and NodeAffinity are shared with other controllers (../scheduling_helpers.h).
 * - queue.c: the scheduling queue (active, backoff and unschedulable pods) on an
 *   injectable clock.
 * - cache.c: the node summaries, counting the pods bound to each node and those the
 *   scheduler assumed there before their binding was observed, and the pods nominated
 *   to a node by preemption.
 * - preemption.c: the default PostFilter (DefaultPreemption): which lower-priority pods
 *   to evict so that a pod fits, and on which node.
 *
 * scheduler.c wires them to informers, the binding subresource, the PodScheduled
 * condition and events.
 */
#ifndef CKUBE_SCHEDULER_INTERNAL_H
#define CKUBE_SCHEDULER_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "ckube/client.h"
#include "ckube/controllers.h"
#include "ckube/internal/util.h"

/* ---- summaries ------------------------------------------------------------------------- */

/* Amounts of the resources NodeResourcesFit checks; cpu in millicores, the rest in units. */
struct ck__sched_resources {
    int64_t milli_cpu;
    int64_t memory;    /* bytes */
    int64_t ephemeral; /* bytes of ephemeral-storage */
    int64_t pods;
};

/* One host port a pod asks for (NodePorts). */
struct ck__sched_port {
    char protocol[8]; /* TCP, UDP, SCTP */
    char host_ip[48]; /* "" and "0.0.0.0" mean every address */
    int port;
};

/* Default requests that scoring assumes for a container without any (GetNonzeroRequests). */
#define CK__SCHED_DEFAULT_MILLI_CPU 100
#define CK__SCHED_DEFAULT_MEMORY    (200 * 1024 * 1024)

/*
 * What the plugins need of a pod, computed once per attempt. pod and the strings are
 * borrowed from the pod object, which must outlive the summary; ports is owned.
 */
struct ck__sched_pod {
    const json_t *pod;
    struct ck__sched_resources requests; /* max(sum of containers, max of init) + overhead */
    int64_t nonzero_cpu, nonzero_memory; /* the same with scoring's defaults */
    struct ck__sched_port *ports;
    size_t n_ports;
    const char *owner_uid; /* the controller reference's uid, or NULL */
    int32_t priority;      /* spec.priority (0 when unset) */
    bool preempt_never;    /* spec.preemptionPolicy Never */
    int64_t start;         /* status.startTime, else metadata.creationTimestamp (seconds; 0) */
    /* being deleted because the scheduler preempted it (podTerminatingByPreemption) */
    bool terminating_by_preemption;
    /*
     * VolumeBinding's PreFilter result (volumebinding.c): copies of the
     * nodeAffinity.required of the volumes the pod's bound claims use (owned; NULL: none).
     */
    json_t *volume_affinity;
};

/* Fills p from pod (borrowed). Returns 0 or CK_ENOMEM. */
int ck__sched_pod_init(struct ck__sched_pod *p, const json_t *pod);
/* Reads again what may change while a pod is bound: its start, whether it is being preempted. */
void ck__sched_pod_refresh(struct ck__sched_pod *p, const json_t *pod);

/* The DisruptionTarget condition's reason on a pod the scheduler evicts. */
#define CK__SCHED_PREEMPTION_REASON "PreemptionByScheduler"
void ck__sched_pod_release(struct ck__sched_pod *p);

/* One node as the plugins see it: the node object and what is placed on it. */
struct ck__sched_node {
    char *name;
    const json_t *node; /* a shared reference (ck_cached_ref); never changed */
    struct ck__sched_resources allocatable;
    struct ck__sched_resources requested; /* pods bound or assumed here (pods: their count) */
    int64_t nonzero_cpu, nonzero_memory;
    struct ck__sched_port *ports; /* in use, one entry per pod's port */
    size_t n_ports, cap_ports;
    struct ck__strmap owners; /* owner uid -> count of its pods here (value as intptr_t) */
};

/* Takes node (a shared reference is taken) and reads its allocatable. Returns 0. */
int ck__sched_node_set(struct ck__sched_node *n, const json_t *node);
void ck__sched_node_release(struct ck__sched_node *n);

/* Counts p on n (sign +1) or stops counting it (-1). Returns 0 or CK_ENOMEM. */
int ck__sched_node_account(struct ck__sched_node *n, const struct ck__sched_pod *p, int sign);

/* How many pods of owner uid n holds. */
int64_t ck__sched_node_owner_count(const struct ck__sched_node *n, const char *owner_uid);

/* ---- filters --------------------------------------------------------------------------- */

enum ck__sched_code {
    CK__SCHED_SUCCESS,
    CK__SCHED_UNSCHEDULABLE, /* preemption might help (resources, ports) */
    CK__SCHED_UNRESOLVABLE,  /* UnschedulableAndUnresolvable: it would not */
};

/* Why a node does not fit: up to four reasons (NodeResourcesFit may give several). */
struct ck__sched_status {
    enum ck__sched_code code;
    const char *reasons[4]; /* static strings, or `buf` */
    size_t n_reasons;
    char buf[320];
};

/* ErrReason* of the filter plugins, as Kubernetes 1.32 words them. */
#define CK__SCHED_REASON_UNSCHEDULABLE "node(s) were unschedulable"
#define CK__SCHED_REASON_NODE_NAME     "node(s) didn't match the requested node name"
#define CK__SCHED_REASON_AFFINITY      "node(s) didn't match Pod's node affinity/selector"
#define CK__SCHED_REASON_PORTS         "node(s) didn't have free ports for the requested pod ports"
#define CK__SCHED_REASON_TOO_MANY_PODS "Too many pods"

/* Each filter: CK__SCHED_SUCCESS, or the code with st's reasons filled. */
enum ck__sched_code ck__sched_filter_unschedulable(const struct ck__sched_pod *p,
                                                   const struct ck__sched_node *n,
                                                   struct ck__sched_status *st);
enum ck__sched_code ck__sched_filter_node_name(const struct ck__sched_pod *p,
                                               const struct ck__sched_node *n,
                                               struct ck__sched_status *st);
enum ck__sched_code ck__sched_filter_taints(const struct ck__sched_pod *p,
                                            const struct ck__sched_node *n,
                                            struct ck__sched_status *st);
enum ck__sched_code ck__sched_filter_affinity(const struct ck__sched_pod *p,
                                              const struct ck__sched_node *n,
                                              struct ck__sched_status *st);
enum ck__sched_code ck__sched_filter_ports(const struct ck__sched_pod *p,
                                           const struct ck__sched_node *n,
                                           struct ck__sched_status *st);
enum ck__sched_code ck__sched_filter_fit(const struct ck__sched_pod *p,
                                         const struct ck__sched_node *n,
                                         struct ck__sched_status *st);

/* VolumeBinding's Filter: every bound volume's node affinity matches the node. */
#define CK__SCHED_REASON_VOLUME_AFFINITY "node(s) had volume node affinity conflict"
enum ck__sched_code ck__sched_filter_volume_binding(const struct ck__sched_pod *p,
                                                    const struct ck__sched_node *n,
                                                    struct ck__sched_status *st);

/*
 * The VolumeBinding plugin's view of storage (volumebinding.c): listers over the
 * scheduler's informers of claims, volumes and classes (zeroed: the plugin is off).
 */
struct ck__sched_volumes {
    struct ck_lister claims, volumes, classes;
    bool on;
};

/*
 * VolumeBinding's PreFilter: every claim the pod's persistentVolumeClaim volumes name
 * exists, is not being deleted and is bound or waits for its first consumer; fills
 * p->volume_affinity. 0, or CK__SCHED_UNRESOLVABLE with *ret_message (to free), the
 * whole FitError text for n_nodes nodes; CK_ENOMEM.
 */
int ck__sched_volumes_prefilter(const struct ck__sched_volumes *v, struct ck__sched_pod *p,
                                size_t n_nodes, char **ret_message);

/*
 * VolumeBinding's PreBind, the part ckube has: each unbound claim of pod whose class
 * binds WaitForFirstConsumer gets volume.kubernetes.io/selected-node: node, so that
 * its provisioner makes the volume there. 0 or the write's error.
 */
int ck__sched_volumes_prebind(const struct ck__sched_volumes *v, const struct ck_ctl_client *client,
                              const json_t *pod, const char *node, struct ck_err *reterr);

/* Every filter in the default profile's order, stopping at the first that fails. */
enum ck__sched_code ck__sched_filter(const struct ck__sched_pod *p, const struct ck__sched_node *n,
                                     struct ck__sched_status *st);

/* ---- scores (0..100 each) ---------------------------------------------------------------- */

/* NodeResourcesFit's LeastAllocated over cpu and memory, with the pod placed. */
int64_t ck__sched_score_least_allocated(const struct ck__sched_pod *p,
                                        const struct ck__sched_node *n);
/* NodeResourcesBalancedAllocation over cpu and memory, with the pod placed. */
int64_t ck__sched_score_balanced(const struct ck__sched_pod *p, const struct ck__sched_node *n);
/*
 * Spreading of one owner's pods: counts[i] is how many pods of the pod's owner node i
 * holds; scores[i] gets 100 for the emptiest node down to 0 for the fullest
 * (SelectorSpread's normalisation). Every score is 100 when the pod has no owner.
 */
void ck__sched_score_spread(const int64_t *counts, size_t n, int64_t *scores);

/* Weights of the scores in the sum (the default profile's: spreading counts twice). */
#define CK__SCHED_WEIGHT_LEAST_ALLOCATED 1
#define CK__SCHED_WEIGHT_BALANCED        1
#define CK__SCHED_WEIGHT_SPREAD          2

/*
 * FitError's message for n_all nodes whose statuses are given (one per node that was
 * filtered), followed by the PostFilter's message when there is one (post_filter: NULL
 * or ""): "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated
 * taint {k: v}. preemption: 0/3 nodes are available: 1 No preemption victims found for
 * incoming pod, 2 Preemption is not helpful for scheduling." Returns a string to free,
 * or NULL when out of memory.
 */
char *ck__sched_fit_message(size_t n_all, const struct ck__sched_status *statuses, size_t n,
                            const char *post_filter);

/* ---- preemption (preemption.c) ------------------------------------------------------------- */

/* Why a node cannot help by preemption (its status in the PostFilter's diagnosis). */
#define CK__SCHED_REASON_NOT_HELPFUL "Preemption is not helpful for scheduling"
#define CK__SCHED_REASON_NO_VICTIMS  "No preemption victims found for incoming pod"

/* A pod placed on a node, as preemption weighs it. */
struct ck__sched_placed {
    const char *key;                  /* "namespace/name" */
    const char *name;                 /* its part after the slash */
    const struct ck__sched_pod *info; /* its summary (priority, start, requests, ports) */
    const json_t *labels;             /* metadata.labels, or NULL */
    bool victim;                      /* out: to be evicted */
    bool violates;                    /* out: evicting it violates a disruption budget */
};

/* A PodDisruptionBudget of the pod's namespace, as filterPodsWithPDBViolation reads it. */
struct ck__sched_budget {
    const char *namespace;
    struct ck_label_selector *selector; /* spec.selector; NULL: matches nothing */
    const json_t *disrupted;            /* status.disruptedPods (pod name -> time), or NULL */
    int64_t allowed;                    /* status.disruptionsAllowed */
};

/*
 * SelectVictimsOnNode: with every pod of pods[] (all placed on n) of a lower priority
 * than p gone, does p pass every filter? If so, gives back as many of them as still let
 * it fit, the most important first (higher priority, then earlier start), those whose
 * eviction would violate a budget before the others; the rest are marked victim (and
 * violates). Returns 1 with *ret_violations (victims that violate a budget), 0 with st
 * filled when p does not fit even so (the filter's reasons, or CK__SCHED_REASON_NO_VICTIMS
 * when no pod has a lower priority), or CK_ENOMEM.
 */
int ck__sched_select_victims(const struct ck__sched_pod *p, const struct ck__sched_node *n,
                             struct ck__sched_placed *pods, size_t n_pods,
                             const struct ck__sched_budget *budgets, size_t n_budgets,
                             size_t *ret_violations, struct ck__sched_status *st);

/* One node where preemption would make room: its victims (marked in pods[]). */
struct ck__sched_candidate {
    const struct ck__sched_node *node;
    const struct ck__sched_placed *pods; /* the node's pods; victims marked */
    size_t n_pods;
    size_t violations;
};

/*
 * pickOneNodeForPreemption: a candidate with no victim at once; else the fewest budget
 * violations, then the lowest highest-priority victim, the smallest sum of priorities,
 * the fewest victims, the latest start of the highest-priority victims, the first.
 * n > 0; returns an index into cands.
 */
size_t ck__sched_pick_candidate(const struct ck__sched_candidate *cands, size_t n);

/*
 * kube-scheduler's number of candidates to look for among n nodes where preemption
 * might help: 10% of them, at least 100, at most n.
 */
size_t ck__sched_preemption_candidates(size_t n);

/* ---- the queue --------------------------------------------------------------------------- */

/* PodInitialBackoffDuration and PodMaxBackoffDuration. */
#define CK__SCHED_INITIAL_BACKOFF (1 * CK_SEC)
#define CK__SCHED_MAX_BACKOFF     (10 * CK_SEC)
/* podMaxInUnschedulablePodsDuration: an unschedulable pod is retried after this anyway. */
#define CK__SCHED_MAX_UNSCHEDULABLE (5 * 60 * CK_SEC)

struct ck__sched_queue;

/* A queue on clock (NULL: real). Returns NULL when out of memory. */
struct ck__sched_queue *ck__sched_queue_new(struct ck_clock *clock);
struct ck__sched_queue *ck__sched_queue_free(struct ck__sched_queue *q);

/*
 * A pending pod was added or changed: into the active queue unless it is already
 * queued there or in backoff, or being scheduled; an unschedulable one moves to the
 * active queue (or backoff, while its backoff lasts). Returns 0 or CK_ENOMEM.
 */
int ck__sched_queue_add(struct ck__sched_queue *q, const char *key);

/* Forgets key wherever it is (the pod was deleted or bound). */
void ck__sched_queue_delete(struct ck__sched_queue *q, const char *key);

/*
 * The next pod to schedule, blocking until one is active (backoff expiring moves pods
 * to the active queue; unschedulable pods older than CK__SCHED_MAX_UNSCHEDULABLE too).
 * Returns 0 with *ret_key (to free), its attempts so far including this one and the
 * scheduling cycle, or CK_ESHUTDOWN.
 */
int ck__sched_queue_pop(struct ck__sched_queue *q, char **ret_key, int *ret_attempts,
                        int64_t *ret_cycle);

/* The pod popped in `cycle` fit nowhere: unschedulable, or backoff if a move came since. */
void ck__sched_queue_unschedulable(struct ck__sched_queue *q, const char *key, int64_t cycle);

/* The pod's attempt failed otherwise (a binding error): into backoff. */
void ck__sched_queue_backoff(struct ck__sched_queue *q, const char *key);

/* The pod popped is done (bound): forgotten. */
void ck__sched_queue_done(struct ck__sched_queue *q, const char *key);

/*
 * A node changed or a pod left one (MoveAllToActiveOrBackoffQueue): every unschedulable
 * pod moves to the active queue, or to backoff while its backoff lasts.
 */
void ck__sched_queue_move_all(struct ck__sched_queue *q);

/* Pods in each set, for tests and metrics. */
void ck__sched_queue_counts(struct ck__sched_queue *q, size_t *ret_active, size_t *ret_backoff,
                            size_t *ret_unschedulable);

/* Wakes every pop with CK_ESHUTDOWN, now and later. */
void ck__sched_queue_shutdown(struct ck__sched_queue *q);

/* ---- the cache ---------------------------------------------------------------------------- */

/*
 * Nodes and the pods placed on them. A pod is counted once, whether the scheduler
 * assumed it (before its binding is seen) or the informer reported it bound; an assumed
 * pod whose binding failed is forgotten. Pods bound to a node the cache does not know
 * are kept and counted when the node appears.
 *
 * Threading: `lock` guards everything; the scheduling cycle holds it while filtering
 * and scoring, the informer handlers while they change it.
 */
struct ck__sched_cache {
    pthread_mutex_t lock;
    struct ck__strmap nodes;       /* name -> struct ck__sched_node * */
    struct ck__strmap pods;        /* "namespace/name" -> struct placed_pod * (cache.c) */
    struct ck__strmap nominated;   /* "namespace/name" -> struct nominated * (cache.c) */
    struct ck__sched_node **order; /* the nodes, for iteration; rebuilt when nodes change */
    size_t n_order;
    bool order_stale;
};

int ck__sched_cache_init(struct ck__sched_cache *c);
void ck__sched_cache_release(struct ck__sched_cache *c);

/* A node was added or changed (node borrowed; a reference is taken). 0 or CK_ENOMEM. */
int ck__sched_cache_set_node(struct ck__sched_cache *c, const json_t *node);
void ck__sched_cache_remove_node(struct ck__sched_cache *c, const char *name);

/*
 * A pod bound to a node was seen (added or changed): counted on its node once. A
 * terminated pod (Succeeded, Failed) is not counted. 0 or CK_ENOMEM.
 */
int ck__sched_cache_set_pod(struct ck__sched_cache *c, const char *key, const json_t *pod);
/* The pod is gone: stops counting it. Returns true when it was counted. */
bool ck__sched_cache_remove_pod(struct ck__sched_cache *c, const char *key);

/* The scheduler placed p on node (cache locked by the caller). 0 or CK_ENOMEM. */
int ck__sched_cache_assume_locked(struct ck__sched_cache *c, const char *key,
                                  const struct ck__sched_pod *p, const char *node);
/* The binding of an assumed pod failed: it no longer counts (unless seen bound). */
void ck__sched_cache_forget(struct ck__sched_cache *c, const char *key);

/*
 * The pods counted on node `name`, with their keys (cache locked by the caller): fills
 * up to cap entries (key, name and info set, the rest zero) and returns how many there
 * are, which may be more than cap.
 */
size_t ck__sched_cache_pods_on_locked(struct ck__sched_cache *c, const char *name,
                                      struct ck__sched_placed *ret, size_t cap);

/*
 * Nominations (the nominator of kube-scheduler): p, whose preemption made room on node,
 * counts there when pods of a lower or equal priority are filtered, until it is bound,
 * deleted, assumed elsewhere or nominated again (cache locked). 0 or CK_ENOMEM.
 */
int ck__sched_cache_nominate_locked(struct ck__sched_cache *c, const char *key,
                                    const struct ck__sched_pod *p, const char *node);

/*
 * The node n as pod p with key sees it: n itself when nothing is nominated there for a
 * pod of p's priority or higher (other than p), else a copy in *scratch with those pods
 * counted (released with ck__sched_node_release). NULL when out of memory.
 */
const struct ck__sched_node *ck__sched_cache_with_nominated_locked(struct ck__sched_cache *c,
                                                                   const struct ck__sched_node *n,
                                                                   const char *key,
                                                                   const struct ck__sched_pod *p,
                                                                   struct ck__sched_node *scratch);

/* The node a pod is nominated to, or NULL (cache locked). */
const char *ck__sched_cache_nominated_node_locked(struct ck__sched_cache *c, const char *key);

/* A copy of n that filters as n does (its pods' owners are not copied). 0 or CK_ENOMEM. */
int ck__sched_node_copy(struct ck__sched_node *dst, const struct ck__sched_node *src);

/* The nodes, in a stable order (cache locked by the caller); valid until it unlocks. */
struct ck__sched_node *const *ck__sched_cache_nodes_locked(struct ck__sched_cache *c,
                                                           size_t *ret_n);

#endif /* CKUBE_SCHEDULER_INTERNAL_H */
