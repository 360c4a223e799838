/*
 * ckube/nscontroller.h - the namespace controller (kubernetes pkg/controller/namespace
 * and its deletion package): empties a namespace being deleted, then removes the
 * `kubernetes` finalizer so the API server removes the namespace.
 *
 * For a namespace with a deletionTimestamp, each sync discovers every namespaced
 * resource (the groups' preferred versions), deletes its content in that namespace
 * (deletecollection where served, else list and delete each), counts what is left and
 * the finalizers holding it, writes status.conditions with Kubernetes' types, reasons
 * and messages, and either requeues (content left) or calls namespaces/NAME/finalize
 * without `kubernetes`.
 */
#ifndef CKUBE_NSCONTROLLER_H
#define CKUBE_NSCONTROLLER_H

#include "ckube/controllers.h"
#include "ckube/informer.h"
#include "ckube/manager.h"
#include "ckube/rest.h"

/* Recheck delay while content remains (Kubernetes waits its estimate; see deleter.c). */
#define CK_NS_RECHECK (1 * CK_SEC)

/*
 * What the controller needs beyond the typed client: collection calls and the finalize
 * subresource, over the metadata client in production and a fake in tests.
 */
struct ck_ns_content_ops {
    /* DELETE the collection of res in namespace with options; CK_ENOENT / CK_EPERM when
     * not served. */
    int (*delete_collection)(void *ctx, const struct ck_resource *res, const char *namespace,
                             const json_t *options, struct ck_err *reterr);
    /* A List (metadata is enough) of res in namespace. */
    int (*list)(void *ctx, const struct ck_resource *res, const char *namespace, json_t **ret_list,
                struct ck_err *reterr);
    /* PUT namespaces/NAME/finalize with ns (a Namespace). */
    int (*finalize)(void *ctx, const json_t *ns, struct ck_err *reterr);
};

struct ck_ns_controller_config {
    struct ck_ctl_client client;             /* namespaces get/update_status, deletes (copied) */
    const struct ck_ns_content_ops *content; /* borrowed */
    void *content_ctx;
    struct ck_discovery *discovery; /* borrowed */
    struct ck_clock *clock;         /* NULL = real */
};

struct ck_ns_controller;

int ck_ns_controller_new(const struct ck_ns_controller_config *config,
                         struct ck_ns_controller **ret_c, struct ck_err *reterr);
struct ck_ns_controller *ck_ns_controller_free(struct ck_ns_controller *c);

/* One sync of namespace name (what a worker runs). */
int ck_ns_controller_sync(struct ck_ns_controller *c, const char *name, struct ck_err *reterr);

/* Its queue (borrowed): a namespace with content left is added back after CK_NS_RECHECK. */
struct ck_wq *ck_ns_controller_queue(struct ck_ns_controller *c);

/* The controller manager's row. */
int ck_ns_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                        struct ck_err *reterr);
int ck_ns_manager_run(void *state, int workers, struct ck_err *reterr);
void ck_ns_manager_stop(void *state);

#endif /* CKUBE_NSCONTROLLER_H */
