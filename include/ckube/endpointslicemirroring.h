/*
 * ckube/endpointslicemirroring.h - the EndpointSlice mirroring controller (kubernetes
 * pkg/controller/endpointslicemirroring).
 *
 * For every Service without a selector whose Endpoints someone wrote by hand, keeps
 * EndpointSlices (discovery.k8s.io/v1) that say the same: each subset's addresses become
 * ready endpoints and its notReadyAddresses not-ready ones (at most
 * CK_MIRRORING_MAX_ENDPOINTS per subset, ready ones first), grouped by address type and
 * ports, at most CK_MIRRORING_MAX_ENDPOINTS per slice. The slices are named after the
 * Endpoints (generateName "<name>-"), carry its labels (and annotations, but
 * endpoints.kubernetes.io/last-change-trigger-time and kubectl's last-applied) plus
 * kubernetes.io/service-name and endpointslice.kubernetes.io/managed-by =
 * CK_MIRRORING_MANAGED_BY, and are owned by the Endpoints (a controller
 * ownerReference). Endpoints labelled endpointslice.kubernetes.io/skip-mirror=true (the
 * kubernetes Service's), or carrying a leader-election annotation, are not mirrored; nor
 * are those of a Service with a selector (the endpointslice controller keeps its
 * slices) or of no Service at all: their mirrored slices are deleted.
 *
 * It reads through three listers (services, endpoints, endpointslices) and writes through
 * a client interface (controllers.h): informers and the REST client in production, fakes
 * in unit tests.
 */
#ifndef CKUBE_ENDPOINTSLICEMIRRORING_H
#define CKUBE_ENDPOINTSLICEMIRRORING_H

#include "ckube/controllers.h"
#include "ckube/informer.h"
#include "ckube/manager.h"

/* Kubernetes' --mirroring-max-endpoints-per-subset default. */
#define CK_MIRRORING_MAX_ENDPOINTS 1000
/* The managed-by label value of the slices it writes. */
#define CK_MIRRORING_MANAGED_BY "endpointslicemirroring-controller.k8s.io"

struct ck_mirroring_controller;

/* What the controller reads and writes through. Every pointer is copied or borrowed. */
struct ck_mirroring_deps {
    const struct ck_ctl_client *client;
    const struct ck_lister *services;
    const struct ck_lister *endpoints;
    const struct ck_lister *slices;
    struct ck_clock *clock; /* NULL = real */
};

/*
 * The controller on deps, without informers (unit tests): drive it with
 * ck_mirroring_controller_sync(). 0, CK_EINVAL (a dependency missing), CK_ENOENT (the
 * API kinds it needs are unknown) or CK_ENOMEM.
 */
int ck_mirroring_controller_new_with(const struct ck_mirroring_deps *deps,
                                     struct ck_mirroring_controller **ret_c, struct ck_err *reterr);

/* Runs one sync of an Endpoints' key ("namespace/name") on the calling thread. */
int ck_mirroring_controller_sync(struct ck_mirroring_controller *c, const char *key,
                                 struct ck_err *reterr);

/* Stops the workers and frees the controller (stop the informers first). */
struct ck_mirroring_controller *ck_mirroring_controller_free(struct ck_mirroring_controller *c);

/* The controller manager's hooks (its table row "endpointslicemirroring"). */
int ck_mirroring_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                               struct ck_err *reterr);
int ck_mirroring_manager_run(void *state, int workers, struct ck_err *reterr);
void ck_mirroring_manager_stop(void *state);

#endif /* CKUBE_ENDPOINTSLICEMIRRORING_H */
