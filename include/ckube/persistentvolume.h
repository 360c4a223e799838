/*
 * ckube/persistentvolume.h - the persistentvolume-binder controller: binds
 * PersistentVolumeClaims to PersistentVolumes, keeps both phases, reclaims
 * released volumes, and provisions claims of the built-in local-path class
 * (kubernetes pkg/controller/volume/persistentvolume); and the two controllers that
 * keep claims and volumes in use from going (pvcprotection, pvprotection).
 */
#ifndef CKUBE_PERSISTENTVOLUME_H
#define CKUBE_PERSISTENTVOLUME_H

#include <stdbool.h>
#include <stdint.h>

#include "ckube/controllers.h"
#include "ckube/informer.h"

/* The annotations Kubernetes' binder and provisioners read and write. */
#define CK_ANN_BIND_COMPLETED         "pv.kubernetes.io/bind-completed"
#define CK_ANN_BOUND_BY_CONTROLLER    "pv.kubernetes.io/bound-by-controller"
#define CK_ANN_PROVISIONED_BY         "pv.kubernetes.io/provisioned-by"
#define CK_ANN_STORAGE_PROVISIONER    "volume.kubernetes.io/storage-provisioner"
#define CK_ANN_BETA_STORAGE_PROVISION "volume.beta.kubernetes.io/storage-provisioner"
#define CK_ANN_SELECTED_NODE          "volume.kubernetes.io/selected-node"
#define CK_ANN_BETA_STORAGE_CLASS     "volume.beta.kubernetes.io/storage-class"

/* The provisioner of the built-in local-path class (k3s's, rancher.io/local-path). */
#define CK_LOCAL_PATH_PROVISIONER "rancher.io/local-path"
/* Where it makes volumes on a node when not told otherwise. */
#define CK_LOCAL_PATH_DIR "/var/lib/ckube/storage"

struct ck_pv_controller;

/* What the controller runs on, for tests (fakes) and for the manager. */
struct ck_pv_controller_deps {
    const struct ck_ctl_client *client; /* copied; what it points to must outlive c */
    const struct ck_lister *volumes;    /* copied; ditto */
    const struct ck_lister *claims;     /* copied; ditto */
    const struct ck_lister *classes;    /* copied; ditto */
    struct ck_clock *clock;             /* the queue's clock; NULL = real */
    bool async_events;                  /* false: events are written on the syncing thread */
    /* The directory the local-path provisioner makes volumes under; NULL: CK_LOCAL_PATH_DIR. */
    const char *local_path_dir;
};

/*
 * The controller over the factory's informers (persistentvolumes,
 * persistentvolumeclaims, storageclasses). local_path_dir as in the deps.
 */
int ck_pv_controller_new(struct ck_rest *client, struct ck_informer_factory *factory,
                         const char *local_path_dir, struct ck_pv_controller **ret,
                         struct ck_err *reterr);

/* The controller on deps, without informers (drive it with _sync and the handlers). */
int ck_pv_controller_new_with(const struct ck_pv_controller_deps *deps,
                              struct ck_pv_controller **ret, struct ck_err *reterr);

/*
 * One sync of key on the calling thread: a claim's key is "namespace/name"
 * (syncClaim), a volume's its name alone (syncVolume). 0, or the error of a
 * write (the runner retries).
 */
int ck_pv_controller_sync(struct ck_pv_controller *c, const char *key, struct ck_err *reterr);

/* The handlers for volumes, claims and storage classes. */
void ck_pv_controller_handlers(struct ck_pv_controller *c, struct ck_event_handler *ret_volumes,
                               struct ck_event_handler *ret_claims,
                               struct ck_event_handler *ret_classes);

/* The work queue (borrowed): tests read what was added. */
struct ck_wq *ck_pv_controller_queue(struct ck_pv_controller *c);

int ck_pv_controller_run(struct ck_pv_controller *c, int workers, struct ck_err *reterr);

/* Stops and frees c (NULL: no-op); returns NULL. */
struct ck_pv_controller *ck_pv_controller_free(struct ck_pv_controller *c);

/* ---- the pvc-protection and pv-protection controllers ------------------------------- */

/*
 * kubernetes pkg/controller/volume/pvcprotection and pvprotection: a claim (volume)
 * being deleted keeps its kubernetes.io/pvc-protection (pv-protection) finalizer while a
 * scheduled, unfinished pod uses it (while it is Bound), and loses it after; one not
 * being deleted gets the finalizer if it lacks it.
 */
#define CK_PVC_PROTECTION_FINALIZER "kubernetes.io/pvc-protection"
#define CK_PV_PROTECTION_FINALIZER  "kubernetes.io/pv-protection"

enum ck_protected { CK_PROTECT_CLAIMS, CK_PROTECT_VOLUMES };

struct ck_protection_controller;

struct ck_protection_controller_deps {
    enum ck_protected what;
    const struct ck_ctl_client *client; /* copied; what it points to must outlive c */
    const struct ck_lister *objects;    /* claims or volumes; copied; ditto */
    const struct ck_lister *pods;       /* claims only; copied; ditto */
    struct ck_clock *clock;             /* the queue's clock; NULL = real */
};

int ck_protection_controller_new(enum ck_protected what, struct ck_rest *client,
                                 struct ck_informer_factory *factory,
                                 struct ck_protection_controller **ret, struct ck_err *reterr);
int ck_protection_controller_new_with(const struct ck_protection_controller_deps *deps,
                                      struct ck_protection_controller **ret, struct ck_err *reterr);
/* One sync of key ("namespace/name" of a claim, a volume's name). 0 or the write's error. */
int ck_protection_controller_sync(struct ck_protection_controller *c, const char *key,
                                  struct ck_err *reterr);
/* The handlers for the protected objects and (claims only) for pods. */
void ck_protection_controller_handlers(struct ck_protection_controller *c,
                                       struct ck_event_handler *ret_objects,
                                       struct ck_event_handler *ret_pods);
struct ck_wq *ck_protection_controller_queue(struct ck_protection_controller *c);
int ck_protection_controller_run(struct ck_protection_controller *c, int workers,
                                 struct ck_err *reterr);
struct ck_protection_controller *ck_protection_controller_free(struct ck_protection_controller *c);

#endif /* CKUBE_PERSISTENTVOLUME_H */
