/*
 * ckube/rootcacertpublisher.h - the root CA certificate publisher (kubernetes
 * pkg/controller/certificates/rootcacertpublisher, publisher.go): every namespace holds
 * a ConfigMap `kube-root-ca.crt` whose `ca.crt` is the cluster's CA, with the
 * kubernetes.io/description annotation; it is created when a namespace appears and
 * restored when it is deleted or changed.
 */
#ifndef CKUBE_ROOTCACERTPUBLISHER_H
#define CKUBE_ROOTCACERTPUBLISHER_H

#include "ckube/controllers.h"
#include "ckube/informer.h"
#include "ckube/manager.h"

#define CK_ROOT_CA_CONFIGMAP              "kube-root-ca.crt"
#define CK_ROOT_CA_KEY                    "ca.crt"
#define CK_ROOT_CA_DESCRIPTION_ANNOTATION "kubernetes.io/description"

struct ck_root_ca_publisher_config {
    struct ck_ctl_client client;   /* configmaps create and update (copied) */
    struct ck_indexer *namespaces; /* the namespaces cache (borrowed) */
    struct ck_indexer *configmaps; /* the configmaps cache (borrowed) */
    const char *root_ca;           /* the CA bundle, PEM (copied) */
    struct ck_clock *clock;        /* NULL = real */
};

struct ck_root_ca_publisher;

int ck_root_ca_publisher_new(const struct ck_root_ca_publisher_config *config,
                             struct ck_root_ca_publisher **ret_c, struct ck_err *reterr);
struct ck_root_ca_publisher *ck_root_ca_publisher_free(struct ck_root_ca_publisher *c);

/*
 * One sync of namespace name (what a worker runs), as Kubernetes' syncNamespace: creates
 * the ConfigMap when the cache does not hold it (a NotFound or namespace-terminating
 * answer is success: nothing to retry); updates it when its data is not exactly
 * {ca.crt: the CA} or its description annotation is empty; else nothing.
 */
int ck_root_ca_publisher_sync(struct ck_root_ca_publisher *c, const char *name,
                              struct ck_err *reterr);

/* Its queue of namespace names (borrowed). */
struct ck_wq *ck_root_ca_publisher_queue(struct ck_root_ca_publisher *c);

/*
 * The controller manager's row (`root-ca-certificate-publisher-controller`): the CA is
 * the one the manager's client verifies the server with (kube-controller-manager's
 * kubeconfig CA when --root-ca-file is not given).
 */
int ck_root_ca_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                             struct ck_err *reterr);
int ck_root_ca_manager_run(void *state, int workers, struct ck_err *reterr);
void ck_root_ca_manager_stop(void *state);

#endif /* CKUBE_ROOTCACERTPUBLISHER_H */
