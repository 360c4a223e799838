/*
 * ckube/replicaset.h - the ReplicaSet controller (kubernetes pkg/controller/replicaset).
 *
 * Keeps spec.replicas pods running for every ReplicaSet: creates them from the template
 * (generateName "<rs>-", a controller ownerReference with blockOwnerDeletion) in
 * slow-start batches of 1, 2, 4, ... at most 500 per sync; deletes surplus pods in
 * Kubernetes' order (unassigned, pending, not ready, ... first); adopts matching orphans
 * and releases pods whose labels no longer match; writes status (replicas,
 * fullyLabeledReplicas, readyReplicas, availableReplicas, observedGeneration and the
 * ReplicaFailure condition) through the status subresource; records Warning events when
 * creates or deletes fail.
 *
 * It reads only through two listers (pods and replicasets) and writes only through a
 * client interface (controllers.h): in production the listers read the shared informers'
 * caches and the client is the REST client; in unit tests both are fakes.
 */
#ifndef CKUBE_REPLICASET_H
#define CKUBE_REPLICASET_H

#include "ckube/controllers.h"
#include "ckube/informer.h"

/* Kubernetes' BurstReplicas: the most pods one sync creates or deletes. */
#define CK_RS_BURST_REPLICAS 500

struct ck_rs_controller;

/*
 * What a ReplicaSet-like kind is to the controller: the names it runs under, the
 * resource it keeps, the owner reference it gives pods, and whether its spec.selector
 * is a LabelSelector or a map of labels matched by equality (a ReplicationController).
 */
struct ck_rs_kind {
    const char *controller; /* the --controllers name and queue name: "replicaset" */
    const char *component;  /* the events' source: "replicaset-controller" */
    const char *group, *version, *resource;
    const char *api_version, *kind; /* in owner references: "apps/v1", "ReplicaSet" */
    bool equality_selector;
};

extern const struct ck_rs_kind ck_rs_kind_replicaset;
extern const struct ck_rs_kind ck_rs_kind_replicationcontroller;

/*
 * Creates the controller and registers its handlers (and a controller-uid index on the
 * pods informer) with the factory's informers; call before ck_informer_factory_start().
 * client and factory are borrowed and must outlive the controller. clock NULL = real.
 */
int ck_rs_controller_new(struct ck_rest *client, struct ck_informer_factory *factory,
                         struct ck_clock *clock, struct ck_rs_controller **ret_c,
                         struct ck_err *reterr);

/* The same for another ReplicaSet-like kind (kind is borrowed; the ones above are static). */
int ck_rs_controller_new_for(const struct ck_rs_kind *kind, struct ck_rest *client,
                             struct ck_informer_factory *factory, struct ck_clock *clock,
                             struct ck_rs_controller **ret_c, struct ck_err *reterr);

/* Waits for the informers to sync, then starts `workers` workers (Kubernetes: 5). */
int ck_rs_controller_run(struct ck_rs_controller *c, int workers, struct ck_err *reterr);

/*
 * Stops the workers (draining what is queued) and frees the controller. Stop the
 * factory's informers first (ck_informer_factory_stop): their handlers use the queue.
 */
struct ck_rs_controller *ck_rs_controller_free(struct ck_rs_controller *c);

/* The controller's work queue (for metrics). */
struct ck_wq *ck_rs_controller_queue(struct ck_rs_controller *c);

/* ---- for unit tests: the controller on given interfaces ------------------------- */

/* What the controller reads and writes through. Every pointer is borrowed for the call. */
struct ck_rs_controller_deps {
    const struct ck_ctl_client *client;  /* copied; what it points to must outlive c */
    const struct ck_lister *pods;        /* copied; ditto */
    const struct ck_lister *replicasets; /* copied; ditto (the kind's objects) */
    const struct ck_rs_kind *kind;       /* NULL: ReplicaSets */
    struct ck_clock *clock;              /* NULL = real */
    /*
     * false (the default for tests): events are written on the syncing thread, once, so a
     * test sees them among the client's actions when the sync returns; true: queued and
     * sent by the recorder's thread, as ck_rs_controller_new() does.
     */
    bool async_events;
};

/*
 * Creates the controller on deps without informers or handlers (controller.NewReplicaSetController
 * with fake informers, as Kubernetes' tests build it): drive it with ck_rs_controller_sync()
 * and feed events with the handlers of ck_rs_controller_handlers(). Returns 0, CK_EINVAL
 * (a missing dependency) or CK_ENOMEM.
 */
int ck_rs_controller_new_with(const struct ck_rs_controller_deps *deps,
                              struct ck_rs_controller **ret_c, struct ck_err *reterr);

/* Runs one sync of key ("namespace/name") on the calling thread (syncReplicaSet). */
int ck_rs_controller_sync(struct ck_rs_controller *c, const char *key, struct ck_err *reterr);

/* The controller's informer handlers, for ReplicaSets and for pods. */
void ck_rs_controller_handlers(struct ck_rs_controller *c, struct ck_event_handler *ret_rs,
                               struct ck_event_handler *ret_pods);

/* The controller's expectations (borrowed). */
struct ck_expectations *ck_rs_controller_expectations(struct ck_rs_controller *c);

/*
 * The controller's event recorder (borrowed), component "replicaset-controller": its
 * stats and metrics (ck_event_recorder_stats, ck_event_recorder_metrics_text).
 */
struct ck_event_recorder *ck_rs_controller_recorder(struct ck_rs_controller *c);

#endif /* CKUBE_REPLICASET_H */
