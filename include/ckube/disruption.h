/*
 * ckube/disruption.h - the disruption controller (kubernetes pkg/controller/disruption):
 * keeps every PodDisruptionBudget's status (expectedPods, desiredHealthy,
 * currentHealthy, disruptionsAllowed, disruptedPods, the DisruptionAllowed
 * condition) from the pods its selector matches, which pods/eviction reads and
 * spends.
 *
 * Like every controller it reads through listers (pods, budgets) and writes through the
 * ctl_client interface; ck_disruption_controller_new_with() takes fakes for unit tests.
 * Thread-safe as the runner uses it.
 */
#ifndef CKUBE_DISRUPTION_H
#define CKUBE_DISRUPTION_H

#include "ckube/controllers.h"
#include "ckube/informer.h"
#include "ckube/manager.h"

/* How long a pod named in status.disruptedPods stays counted as disrupted (DeletionTimeout). */
#define CK_DISRUPTION_DELETION_TIMEOUT (2 * 60 * CK_SEC)

struct ck_disruption_controller;

/* Over the shared informers (pods, PodDisruptionBudgets) and the REST client. */
int ck_disruption_controller_new(struct ck_rest *client, struct ck_informer_factory *factory,
                                 struct ck_clock *clock, struct ck_disruption_controller **ret_c,
                                 struct ck_err *reterr);

struct ck_disruption_controller_deps {
    const struct ck_ctl_client *client; /* copied; what it points to must outlive c */
    const struct ck_lister *pods;       /* copied; ditto */
    const struct ck_lister *budgets;    /* copied; ditto */
    struct ck_clock *clock;             /* NULL = real */
};

/* Over given listers and client (unit tests); events are written synchronously. */
int ck_disruption_controller_new_with(const struct ck_disruption_controller_deps *deps,
                                      struct ck_disruption_controller **ret_c,
                                      struct ck_err *reterr);

/* Syncs the budget "namespace/name" once (the runner's sync). */
int ck_disruption_controller_sync(struct ck_disruption_controller *c, const char *key,
                                  struct ck_err *reterr);

/* Waits for the informers, then starts workers. */
int ck_disruption_controller_run(struct ck_disruption_controller *c, int workers,
                                 struct ck_err *reterr);

/* Stops the workers and frees everything. NULL is a no-op; returns NULL. */
struct ck_disruption_controller *ck_disruption_controller_free(struct ck_disruption_controller *c);

/* The controller's queue (tests look at what was enqueued). */
struct ck_wq *ck_disruption_controller_queue(struct ck_disruption_controller *c);

/* The controller manager's row (manager.c). */
int ck_disruption_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                                struct ck_err *reterr);
int ck_disruption_manager_run(void *state, int workers, struct ck_err *reterr);
void ck_disruption_manager_stop(void *state);

#endif /* CKUBE_DISRUPTION_H */
