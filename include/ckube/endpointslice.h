/*
 * ckube/endpointslice.h - the EndpointSlice controller (kubernetes
 * pkg/controller/endpointslice).
 *
 * For every Service with a selector, keeps EndpointSlices (discovery.k8s.io/v1)
 * listing the pods it selects: one endpoint per pod with an IP (ready, serving,
 * terminating as the pod is), the service's ports resolved on each pod
 * (a named targetPort looks up the container port of that name), at most
 * CK_ENDPOINTSLICE_MAX_ENDPOINTS endpoints per slice, pods whose ports resolve
 * alike in the same slices. The slices are named after the service
 * (generateName "<service>-"), labelled kubernetes.io/service-name and
 * endpointslice.kubernetes.io/managed-by, and owned by the Service (a
 * controller ownerReference), so the garbage collector removes them with it.
 *
 * It reads through three listers (services, pods, endpointslices) and writes
 * through a client interface (controllers.h): informers and the REST client
 * in production, fakes in unit tests.
 */
#ifndef CKUBE_ENDPOINTSLICE_H
#define CKUBE_ENDPOINTSLICE_H

#include "ckube/controllers.h"
#include "ckube/informer.h"
#include "ckube/manager.h"

/* Kubernetes' --max-endpoints-per-slice default. */
#define CK_ENDPOINTSLICE_MAX_ENDPOINTS 100
/* The managed-by label value of the slices it writes. */
#define CK_ENDPOINTSLICE_MANAGED_BY "endpointslice-controller.k8s.io"

struct ck_eps_controller;

/* What the controller reads and writes through. Every pointer is copied or borrowed. */
struct ck_eps_controller_deps {
    const struct ck_ctl_client *client;
    const struct ck_lister *services;
    const struct ck_lister *pods;
    const struct ck_lister *slices;
    struct ck_clock *clock; /* NULL = real */
};

/*
 * The controller on deps, without informers (unit tests): drive it with
 * ck_eps_controller_sync(). 0, CK_EINVAL (a dependency missing), CK_ENOENT (the
 * API kinds it needs are unknown) or CK_ENOMEM.
 */
int ck_eps_controller_new_with(const struct ck_eps_controller_deps *deps,
                               struct ck_eps_controller **ret_c, struct ck_err *reterr);

/* Runs one sync of a Service's key ("namespace/name") on the calling thread. */
int ck_eps_controller_sync(struct ck_eps_controller *c, const char *key, struct ck_err *reterr);

/* Stops the workers and frees the controller (stop the informers first). */
struct ck_eps_controller *ck_eps_controller_free(struct ck_eps_controller *c);

/* The controller manager's hooks (its table row "endpointslice"). */
int ck_eps_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                         struct ck_err *reterr);
int ck_eps_manager_run(void *state, int workers, struct ck_err *reterr);
void ck_eps_manager_stop(void *state);

#endif /* CKUBE_ENDPOINTSLICE_H */
