/*
 * ckube/daemonset.h - the DaemonSet controller (kubernetes pkg/controller/daemon): one
 * pod per node the DaemonSet's template fits (node selector, required node affinity,
 * taints against the template's tolerations plus those Kubernetes adds to daemon pods),
 * each created with a required node affinity on metadata.name for the scheduler to bind;
 * RollingUpdate (maxUnavailable / maxSurge) and OnDelete; ControllerRevisions for the
 * history `kubectl rollout history|undo ds` reads; the status.
 *
 * It reads through listers (pods, nodes, DaemonSets, ControllerRevisions) and writes
 * through the ctl_client interface; ck_ds_controller_new_with() takes fakes and a fake
 * clock for unit tests.
 */
#ifndef CKUBE_DAEMONSET_H
#define CKUBE_DAEMONSET_H

#include "ckube/controllers.h"
#include "ckube/informer.h"
#include "ckube/manager.h"

/* BurstReplicas: at most this many creates (and deletes) per sync of one DaemonSet. */
#define CK_DS_BURST_REPLICAS 250
/* The back-off before a failed daemon pod on a node is replaced: 1 s doubling to 15 min. */
#define CK_DS_FAILED_POD_BACKOFF_INITIAL (1 * CK_SEC)
#define CK_DS_FAILED_POD_BACKOFF_MAX     (15 * 60 * CK_SEC)

/* The DaemonSet annotation carrying the template generation (apps/v1's spelling of it). */
#define CK_DS_TEMPLATE_GENERATION_ANNOTATION "deprecated.daemonset.template.generation"
/* The pod label with the template generation the pod was made from. */
#define CK_DS_TEMPLATE_GENERATION_LABEL "pod-template-generation"

struct ck_ds_controller;

int ck_ds_controller_new(struct ck_rest *client, struct ck_informer_factory *factory,
                         struct ck_clock *clock, struct ck_ds_controller **ret_c,
                         struct ck_err *reterr);

struct ck_ds_controller_deps {
    const struct ck_ctl_client *client; /* copied; what it points to must outlive c */
    const struct ck_lister *pods;       /* copied; ditto */
    const struct ck_lister *nodes;      /* copied; ditto */
    const struct ck_lister *daemonsets; /* copied; ditto */
    const struct ck_lister *revisions;  /* copied; ditto */
    struct ck_clock *clock;             /* NULL: the real clock */
};

/* Over given listers and client (unit tests); events are written synchronously. */
int ck_ds_controller_new_with(const struct ck_ds_controller_deps *deps,
                              struct ck_ds_controller **ret_c, struct ck_err *reterr);

/* One sync of key ("namespace/name"), as a worker would run it. */
int ck_ds_controller_sync(struct ck_ds_controller *c, const char *key, struct ck_err *reterr);
int ck_ds_controller_run(struct ck_ds_controller *c, int workers, struct ck_err *reterr);
struct ck_ds_controller *ck_ds_controller_free(struct ck_ds_controller *c);

/* The controller's queue (tests look at what handlers and syncs enqueued) and expectations. */
struct ck_wq *ck_ds_controller_queue(struct ck_ds_controller *c);
struct ck_expectations *ck_ds_controller_expectations(struct ck_ds_controller *c);

/*
 * The handlers the controller registers on its informers, for tests that feed events
 * by hand: DaemonSets, pods, nodes, ControllerRevisions.
 */
void ck_ds_controller_handlers(struct ck_ds_controller *c, struct ck_event_handler *ret_ds,
                               struct ck_event_handler *ret_pods,
                               struct ck_event_handler *ret_nodes,
                               struct ck_event_handler *ret_revisions);

/*
 * NodeShouldRunDaemonPod: whether a daemon pod of ds should be created on node
 * (*ret_should_run) and whether one already there may stay (*ret_should_continue: the
 * pod fits, or the only taints it does not tolerate are NoSchedule ones).
 */
void ck_ds_node_should_run(const json_t *node, const json_t *ds, bool *ret_should_run,
                           bool *ret_should_continue);

/*
 * AddOrUpdateDaemonPodTolerations: adds to a pod spec the tolerations every daemon pod
 * gets (not-ready and unreachable NoExecute; disk-, memory-, pid-pressure and
 * unschedulable NoSchedule; network-unavailable NoSchedule with hostNetwork), each
 * unless an equal one is there. Returns 0 or CK_ENOMEM.
 */
int ck_ds_add_daemon_tolerations(json_t *pod_spec);

/* The controller manager's row (manager.c). */
int ck_ds_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                        struct ck_err *reterr);
int ck_ds_manager_run(void *state, int workers, struct ck_err *reterr);
void ck_ds_manager_stop(void *state);

#endif /* CKUBE_DAEMONSET_H */
