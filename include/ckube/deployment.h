/*
 * ckube/deployment.h - the Deployment controller (kubernetes pkg/controller/deployment).
 *
 * Rolls a Deployment's pod template out through ReplicaSets: one ReplicaSet per template
 * (named "<deployment>-<pod-template-hash>", the hash label on its selector, template and
 * pods, owned by the Deployment), scaled in Kubernetes' order for RollingUpdate (within
 * maxSurge and maxUnavailable) or Recreate (old ones to 0, wait for their pods to go,
 * then the new one); proportional scaling of a rollout in flight; pause and resume;
 * rollback by template (kubectl's client-side undo: the old ReplicaSet is reused and
 * takes the next revision); the revision annotations; cleanup of old ReplicaSets beyond
 * revisionHistoryLimit; status and conditions (Available, Progressing with the progress
 * deadline, ReplicaFailure) through the status subresource; ScalingReplicaSet events.
 *
 * It reads only through three listers (Deployments, ReplicaSets, pods) and writes only
 * through a client interface (controllers.h): in production they are the shared
 * informers' caches and the REST client; in unit tests they are fakes.
 */
#ifndef CKUBE_DEPLOYMENT_H
#define CKUBE_DEPLOYMENT_H

#include "ckube/controllers.h"
#include "ckube/informer.h"

struct ck_deploy_controller;

/*
 * Creates the controller and registers its handlers with the factory's informers for
 * Deployments, ReplicaSets and pods; call before ck_informer_factory_start(). client and
 * factory are borrowed and must outlive the controller. clock (the queue's) NULL = real.
 */
int ck_deploy_controller_new(struct ck_rest *client, struct ck_informer_factory *factory,
                             struct ck_clock *clock, struct ck_deploy_controller **ret_c,
                             struct ck_err *reterr);

/* Waits for the informers to sync, then starts `workers` workers (Kubernetes: 5). */
int ck_deploy_controller_run(struct ck_deploy_controller *c, int workers, struct ck_err *reterr);

/*
 * Stops the workers (draining what is queued) and frees the controller. Stop the
 * factory's informers first (ck_informer_factory_stop): their handlers use the queue.
 */
struct ck_deploy_controller *ck_deploy_controller_free(struct ck_deploy_controller *c);

/* The controller's work queue (for metrics and tests). */
struct ck_wq *ck_deploy_controller_queue(struct ck_deploy_controller *c);

/* ---- for unit tests: the controller on given interfaces ------------------------- */

/* What the controller reads and writes through. Every pointer is borrowed for the call. */
struct ck_deploy_controller_deps {
    const struct ck_ctl_client *client;  /* copied; what it points to must outlive c */
    const struct ck_lister *deployments; /* copied; ditto */
    const struct ck_lister *replicasets; /* copied; ditto */
    const struct ck_lister *pods;        /* copied; ditto */
    struct ck_clock *clock;              /* the queue's clock; NULL = real */
    /*
     * The wall clock, nanoseconds since the Unix epoch, for conditions, minReadySeconds
     * and progress deadlines; NULL = the real time.
     */
    int64_t (*now)(void *arg);
    void *now_arg;
    /*
     * false (the default for tests): events are written on the syncing thread, so a test
     * sees them among the client's actions when the sync returns; true: queued and sent
     * by the recorder's thread, as ck_deploy_controller_new() does.
     */
    bool async_events;
};

/*
 * Creates the controller on deps without informers or handlers: drive it with
 * ck_deploy_controller_sync() and feed events with ck_deploy_controller_handlers().
 * Returns 0, CK_EINVAL (a missing dependency) or CK_ENOMEM.
 */
int ck_deploy_controller_new_with(const struct ck_deploy_controller_deps *deps,
                                  struct ck_deploy_controller **ret_c, struct ck_err *reterr);

/* Runs one sync of key ("namespace/name") on the calling thread (syncDeployment). */
int ck_deploy_controller_sync(struct ck_deploy_controller *c, const char *key,
                              struct ck_err *reterr);

/* The controller's informer handlers, for Deployments, ReplicaSets and pods. */
void ck_deploy_controller_handlers(struct ck_deploy_controller *c,
                                   struct ck_event_handler *ret_deployments,
                                   struct ck_event_handler *ret_rss,
                                   struct ck_event_handler *ret_pods);

#endif /* CKUBE_DEPLOYMENT_H */
