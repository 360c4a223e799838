/*
 * ckube/sacontroller.h - the ServiceAccount controller (kubernetes
 * pkg/controller/serviceaccount, serviceaccounts_controller.go): makes sure every
 * active namespace has a `default` ServiceAccount, creating it when a namespace
 * appears or when the account is deleted.
 */
#ifndef CKUBE_SACONTROLLER_H
#define CKUBE_SACONTROLLER_H

#include "ckube/controllers.h"
#include "ckube/informer.h"
#include "ckube/manager.h"

/* The accounts every namespace gets (Kubernetes' ServiceAccountsToEnsure). */
#define CK_SA_DEFAULT_NAME "default"

struct ck_sa_controller_config {
    struct ck_ctl_client client;   /* serviceaccounts create (copied) */
    struct ck_indexer *namespaces; /* the namespaces cache (borrowed) */
    struct ck_indexer *accounts;   /* the serviceaccounts cache (borrowed) */
    struct ck_clock *clock;        /* NULL = real */
};

struct ck_sa_controller;

int ck_sa_controller_new(const struct ck_sa_controller_config *config,
                         struct ck_sa_controller **ret_c, struct ck_err *reterr);
struct ck_sa_controller *ck_sa_controller_free(struct ck_sa_controller *c);

/*
 * One sync of namespace name (what a worker runs): nothing when the namespace is not in
 * the cache or not Active, or when its accounts are; otherwise creates the missing ones
 * (an AlreadyExists answer is success).
 */
int ck_sa_controller_sync(struct ck_sa_controller *c, const char *name, struct ck_err *reterr);

/* Its queue of namespace names (borrowed). */
struct ck_wq *ck_sa_controller_queue(struct ck_sa_controller *c);

/* The controller manager's row (`serviceaccount`). */
int ck_sa_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                        struct ck_err *reterr);
int ck_sa_manager_run(void *state, int workers, struct ck_err *reterr);
void ck_sa_manager_stop(void *state);

#endif /* CKUBE_SACONTROLLER_H */
