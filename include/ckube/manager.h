/*
 * ckube/manager.h - the controller manager: runs a selection of controllers against one
 * API server through a REST client, in `ckube server` or in `ckube controller-manager`.
 */
#ifndef CKUBE_MANAGER_H
#define CKUBE_MANAGER_H

#include <stdbool.h>

#include "ckube/rest.h"

/* kube-controller-manager's --kube-api-qps and --kube-api-burst defaults. */
#define CK_CONTROLLER_MANAGER_QPS   20.0
#define CK_CONTROLLER_MANAGER_BURST 30

struct ck_controller_manager_config {
    struct ck_rest *client;  /* borrowed; must outlive the manager */
    const char *controllers; /* --controllers: "*", "*,-replicaset", "replicaset" ... */
    int workers;             /* workers per controller; 0: 5 (--concurrent-*-syncs) */
};

struct ck_controller_manager;

/*
 * Checks a --controllers value: 0, or CK_EINVAL naming the unknown controller
 * ("\"x\" is not in the list of known controllers").
 */
int ck_controller_manager_check(const char *selection, struct ck_err *reterr);

/* Whether selection turns controller name on ("*" does for every default controller). */
bool ck_controller_manager_enabled(const char *selection, const char *name);

/*
 * Starts the selected controllers: their informers at once, their workers once the
 * caches have synced (in the background: this never waits for the server). Returns 0
 * and sets *ret_cm, or CK_EINVAL (bad selection) or CK_ENOMEM.
 */
int ck_controller_manager_start(const struct ck_controller_manager_config *config,
                                struct ck_controller_manager **ret_cm, struct ck_err *reterr);

/* Stops informers and workers and frees the manager. NULL is a no-op. */
struct ck_controller_manager *ck_controller_manager_free(struct ck_controller_manager *cm);

#endif /* CKUBE_MANAGER_H */
