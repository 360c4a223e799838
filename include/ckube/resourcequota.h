/*
 * ckube/resourcequota.h - the resourcequota controller: keeps every ResourceQuota's
 * status.hard equal to its spec.hard and its status.used equal to what the namespace's
 * objects use (kubernetes pkg/controller/resourcequota).
 */
#ifndef CKUBE_RESOURCEQUOTA_H
#define CKUBE_RESOURCEQUOTA_H

#include <stdint.h>

#include "ckube/controllers.h"
#include "ckube/informer.h"

/* kube-controller-manager's --resource-quota-sync-period default: 5 minutes. */
#define CK_RESOURCE_QUOTA_SYNC_PERIOD (5 * 60 * CK_SEC)

struct ck_resourcequota_controller;

/* One resource the controller counts, and the cache of its objects. */
struct ck_quota_counted {
    const char *group;              /* "" for core */
    const char *resource;           /* "pods", "deployments" */
    const struct ck_lister *lister; /* copied; what it points to must outlive the controller */
};

/* What the controller runs on, for tests (fakes) and for the manager. */
struct ck_resourcequota_controller_deps {
    const struct ck_ctl_client *client; /* copied; what it points to must outlive c */
    const struct ck_lister *quotas;     /* copied; ditto */
    const struct ck_quota_counted *counted;
    size_t n_counted;
    struct ck_clock *clock; /* the queue's clock; NULL = real */
    /* The wall clock, nanoseconds since the Unix epoch; NULL = the real time. */
    int64_t (*now)(void *arg);
    void *now_arg;
    int64_t sync_period; /* ns between full recounts of a quota; 0: 5 minutes */
};

/*
 * The controller over the factory's informers: ResourceQuotas and the resources it
 * counts (pods, services, persistentvolumeclaims, configmaps, secrets,
 * replicationcontrollers, resourcequotas, and apps' and batch's workloads). sync_period
 * is --resource-quota-sync-period (0: 5 minutes).
 */
int ck_resourcequota_controller_new(struct ck_rest *client, struct ck_informer_factory *factory,
                                    int64_t sync_period, struct ck_resourcequota_controller **ret,
                                    struct ck_err *reterr);

/* The controller on deps, without informers (drive it with _sync and the handlers). */
int ck_resourcequota_controller_new_with(const struct ck_resourcequota_controller_deps *deps,
                                         struct ck_resourcequota_controller **ret,
                                         struct ck_err *reterr);

/*
 * syncResourceQuota for key ("namespace/name"): recounts the quota's usage from the
 * caches and writes its status when it changed; queues the key again after the sync
 * period. 0, or the write's error (the runner retries).
 */
int ck_resourcequota_controller_sync(struct ck_resourcequota_controller *c, const char *key,
                                     struct ck_err *reterr);

/*
 * The handler for ResourceQuotas (which == NULL) or for the objects of the counted
 * resource named which ("pods"; with group): an event that changes what an object uses
 * queues the quotas of its namespace that limit that resource.
 */
void ck_resourcequota_controller_handler(struct ck_resourcequota_controller *c, const char *group,
                                         const char *which, struct ck_event_handler *ret);

/* The work queue (borrowed): tests read what was added. */
struct ck_wq *ck_resourcequota_controller_queue(struct ck_resourcequota_controller *c);

int ck_resourcequota_controller_run(struct ck_resourcequota_controller *c, int workers,
                                    struct ck_err *reterr);

/* Stops and frees c (NULL: no-op); returns NULL. */
struct ck_resourcequota_controller *
ck_resourcequota_controller_free(struct ck_resourcequota_controller *c);

#endif /* CKUBE_RESOURCEQUOTA_H */
