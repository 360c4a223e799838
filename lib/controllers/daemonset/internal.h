/*
 * internal.h - private to the DaemonSet controller (lib/controllers/daemonset/), never
 * installed.
 *
 * The files follow pkg/controller/daemon:
 * - util.c: the node predicate (NodeShouldRunDaemonPod), the tolerations added to daemon
 *   pods, the pod template with its generation and hash labels, the node a pod is meant
 *   for (GetTargetNodeName), IsPodUpdated, the surge and unavailable counts, pod order,
 *   the failed-pod back-off, and what the other files share (a string array, claiming);
 * - history.c: ControllerRevisions (constructHistory, snapshot, dedupCurHistories,
 *   cleanupHistory);
 * - update.c: the RollingUpdate step (rollingUpdate, findUpdatedPodsOnNode);
 * - controller.c: handlers, sync (syncDaemonSet), manage, syncNodes, status and lifecycle.
 *
 * Threading: the runner calls sync for one key at a time per key, so everything a sync
 * builds is its own; the controller's shared state is the expectations (thread-safe) and
 * the back-off table (under its own lock).
 */
#ifndef CKUBE_DAEMONSET_INTERNAL_H
#define CKUBE_DAEMONSET_INTERNAL_H

#include <pthread.h>

#include "../internal.h"
#include "ckube/daemonset.h"
#include "ckube/internal/util.h"

#define CK__DS_API_VERSION "apps/v1"
#define CK__DS_KIND        "DaemonSet"
#define CK__DS_HASH_LABEL  "controller-revision-hash"

/* flowcontrol.Backoff for failed pods, keyed by "<ds uid>/<node>". */
struct ck__ds_backoff {
    pthread_mutex_t lock;
    struct ck__strmap entries; /* key -> struct ck__ds_backoff_entry (inline) */
};

struct ck_ds_controller {
    struct ck_ctl_client client;
    struct ck_lister pods, nodes, sets, revisions;
    const struct ck_resource *pods_res, *nodes_res, *sets_res, *revisions_res;
    struct ck_ctl_event_sink sink;
    struct ck_event_recorder *recorder;
    struct ck_informer *infs[4]; /* sets, pods, nodes, revisions; NULL for given listers */
    struct ck_expectations *exp;
    struct ck_clock *clock;
    struct ck__ds_backoff backoff;
    bool backoff_ready;  /* backoff was initialised */
    struct ck_wq *queue; /* ctl.queue */
    struct ck_controller ctl;
    struct ck_runner *runner;
};

/* ---- what a sync works on --------------------------------------------------------- */

/* The daemon pods meant for one node (getNodesToDaemonPods), oldest first after sorting. */
struct ck__ds_node_pods {
    const char *node;    /* borrowed from a pod or node */
    const json_t **pods; /* borrowed from the sync's pod list */
    size_t n;
};

/* The map of node name -> daemon pods, sorted by node name. */
struct ck__ds_pods_by_node {
    struct ck__ds_node_pods *groups;
    size_t n;
    const json_t **storage; /* every pod once, grouped */
};

/*
 * Groups the claimed pods by the node each is meant for, leaving out pods both terminal
 * and being deleted (includeDeletedTerminal false); pods naming no node are left out.
 * Returns 0 or CK_ENOMEM.
 */
int ck__ds_group_pods(const struct ck_obj_list *pods, struct ck__ds_pods_by_node *ret);
void ck__ds_pods_by_node_release(struct ck__ds_pods_by_node *m);
/* The group of node, or NULL. */
const struct ck__ds_node_pods *ck__ds_pods_on(const struct ck__ds_pods_by_node *m,
                                              const char *node);

/* ---- util.c ------------------------------------------------------------------------ */

static inline const json_t *ck__ds_meta(const json_t *obj)
{
    return json_object_get(obj, "metadata");
}

static inline const char *ck__ds_name_of(const json_t *obj)
{
    return json_string_value(json_object_get(ck__ds_meta(obj), "name"));
}

/* A growable array of borrowed strings; nomem is set when a push found no memory. */
struct ck__ds_names {
    const char **v;
    size_t n, cap;
    bool nomem;
};

/* Appends s (borrowed); on no memory sets a->nomem and leaves the array as it was. */
void ck__ds_names_push(struct ck__ds_names *a, const char *s);

/*
 * The objects of ds's namespace in lister that ds controls after adopting matching
 * orphans and releasing non-matching children (ClaimObjects); child_res is where the
 * children are written. *ret_claimed gets new references.
 */
int ck__ds_claim(struct ck_ds_controller *c, const json_t *ds, const struct ck_label_selector *sel,
                 struct ck_lister *lister, const struct ck_resource *child_res,
                 struct ck_obj_list *ret_claimed, struct ck_err *reterr);

/* GetTargetNodeName: spec.nodeName, or the one value of the metadata.name In affinity. */
const char *ck__ds_target_node(const json_t *pod);

/* GetTemplateGeneration: the annotation as a number; false when absent or malformed. */
bool ck__ds_template_generation(const json_t *ds, long long *ret);

/* IsPodUpdated: the pod has hash (non-empty) or the DaemonSet's template generation. */
bool ck__ds_pod_updated(const json_t *pod, const char *hash, const json_t *ds);

/*
 * CreatePodTemplate: ds's template with the daemon tolerations and the labels
 * pod-template-generation (when known) and controller-revision-hash (when hash is not
 * empty). New reference, NULL on no memory.
 */
json_t *ck__ds_pod_template(const json_t *ds, const char *hash);

/* ReplaceDaemonSetPodNodeNameNodeAffinity on a pod spec. Returns 0 or CK_ENOMEM. */
int ck__ds_set_node_affinity(json_t *pod_spec, const char *node);

/* IsPodAvailable at now (ns since the epoch) for minReadySeconds. */
bool ck__ds_pod_available(const json_t *pod, long long min_ready_seconds, int64_t now);

/* podByCreationTimestampAndPhase: scheduled first, then oldest, then by name. */
void ck__ds_sort_pods(const json_t **pods, size_t n);

/* spec.minReadySeconds. */
long long ck__ds_min_ready(const json_t *ds);

/* The update strategy is RollingUpdate (the default). */
bool ck__ds_rolling(const json_t *ds);

/*
 * UnavailableCount and SurgeCount for desired nodes (percentages round up); 0 unless
 * RollingUpdate. Returns 0, or CK_EINVAL on a malformed value.
 */
int ck__ds_surge_unavailable(const json_t *ds, int desired, int *ret_surge, int *ret_unavailable);

/* The failed-pod back-off (flowcontrol.NewBackOff(1s, 15min)). */
int ck__ds_backoff_init(struct ck__ds_backoff *b);
void ck__ds_backoff_release(struct ck__ds_backoff *b);
/* IsInBackOffSinceUpdate: *ret_delay gets the current back-off when true. */
bool ck__ds_backoff_active(struct ck__ds_backoff *b, const char *key, int64_t now,
                           int64_t *ret_delay);
/* Next: starts or doubles key's back-off at now. */
void ck__ds_backoff_next(struct ck__ds_backoff *b, const char *key, int64_t now);
/* GC: forgets entries unused for twice the maximum. */
void ck__ds_backoff_gc(struct ck__ds_backoff *b, int64_t now);

/* ---- history.c ---------------------------------------------------------------------- */

/*
 * constructHistory: the ControllerRevisions the DaemonSet controls (adopting matching
 * orphans), the current one (made when missing, renumbered to be newest when an older
 * revision matches again) and the others. *ret_hash gets the current revision's hash
 * label (a copy to free); *ret_old the other revisions (new references).
 */
int ck__ds_construct_history(struct ck_ds_controller *c, const json_t *ds, char **ret_hash,
                             struct ck_obj_list *ret_old, struct ck_err *reterr);

/* cleanupHistory: deletes the oldest revisions beyond revisionHistoryLimit not in use. */
int ck__ds_cleanup_history(struct ck_ds_controller *c, const json_t *ds,
                           const struct ck__ds_pods_by_node *pods, struct ck_obj_list *old,
                           struct ck_err *reterr);

/* ---- controller.c / update.c ------------------------------------------------------ */

/*
 * syncNodes: deletes the named pods and creates a pod on each node (both capped at
 * CK_DS_BURST_REPLICAS), setting the expectations first. Returns 0 or the first error.
 */
int ck__ds_sync_nodes(struct ck_ds_controller *c, const json_t *ds, const char *ds_key,
                      const char *const *pods_to_delete, size_t n_delete,
                      const char *const *nodes_to_create, size_t n_create, const char *hash,
                      struct ck_err *reterr);

/* The nodes of the cluster (the node lister's list). */
int ck__ds_list_nodes(struct ck_ds_controller *c, struct ck_obj_list *ret, struct ck_err *reterr);

/* rollingUpdate over the nodes and the DaemonSet's claimed pods. */
int ck__ds_rolling_update(struct ck_ds_controller *c, const json_t *ds, const char *ds_key,
                          const struct ck_obj_list *nodes, const struct ck_obj_list *pods,
                          const char *hash, struct ck_err *reterr);

#endif /* CKUBE_DAEMONSET_INTERNAL_H */
