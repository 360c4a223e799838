/*
 * ckube/manager.h - the controller manager: runs a selection of controllers against one
 * API server through a REST client, in `ckube server` or in `ckube controller-manager`.
 *
 * The controllers it knows are one table (kube-controller-manager's NewControllerDescriptors):
 * a name, whether "*" turns it on, and its start, run and stop functions. --controllers
 * validation and the list of known names in help texts come from that table; adding a
 * controller is adding a row.
 */
#ifndef CKUBE_MANAGER_H
#define CKUBE_MANAGER_H

#include <stdbool.h>
#include <stdint.h>

#include "ckube/informer.h"
#include "ckube/podautoscaler.h"
#include "ckube/rest.h"

/* kube-controller-manager's --kube-api-qps and --kube-api-burst defaults. */
#define CK_CONTROLLER_MANAGER_QPS   20.0
#define CK_CONTROLLER_MANAGER_BURST 30

/* Workers of a controller without a default of its own. */
#define CK_CONTROLLER_DEFAULT_WORKERS 5

/* One --concurrent-NAME-syncs value: the workers of the controller named so in the table. */
struct ck_controller_workers {
    const char *controller; /* a table row's name: "garbagecollector" */
    int workers;            /* >= 1 */
};

struct ck_controller_manager_config {
    struct ck_rest *client;  /* borrowed; must outlive the manager */
    const char *controllers; /* --controllers: "*", "*,-replicaset", "replicaset" ... */
    /* per-controller worker counts; a controller not named runs its row's default */
    const struct ck_controller_workers *workers;
    size_t n_workers;
    /*
     * The client for a controller that has its own identity (its descriptor's `user`,
     * "system:kube-scheduler"), which the caller keeps alive as long as the manager;
     * NULL (or a callback answering NULL): `client`.
     */
    struct ck_rest *(*client_for)(void *arg, const char *user);
    void *client_for_arg;
    int64_t node_monitor_grace_period;  /* --node-monitor-grace-period; 0: 40 s */
    const char *cluster_cidr;           /* --cluster-cidr (nodeipam); NULL: its default */
    int node_cidr_mask_size;            /* --node-cidr-mask-size (nodeipam); 0: its default */
    int64_t resource_quota_sync_period; /* --resource-quota-sync-period, ns; 0: 5 minutes */
    struct ck_hpa_options hpa;          /* --horizontal-pod-autoscaler-*; zeros: defaults */
    /* csrsigning's CA (--cluster-signing-cert-file, -key-file; NULL: not started) */
    const char *cluster_signing_cert_file;
    const char *cluster_signing_key_file;
    long long cluster_signing_duration; /* --cluster-signing-duration, s; 0: one year */
    /*
     * The informer factory to share with other components of the process (borrowed; it
     * must outlive the manager, which starts the informers its controllers ask for and
     * removes their handlers when it stops, but never stops the factory). NULL: a factory
     * of the manager's own over `client`, stopped and freed with it.
     */
    struct ck_informer_factory *factory;
};

struct ck_controller_manager;

/* What the manager gives a controller to start with. Every pointer is borrowed. */
struct ck_controller_context {
    struct ck_rest *client;                /* outlives the controller */
    struct ck_informer_factory *factory;   /* the shared factory: maybe running already */
    int workers;                           /* workers the controller should run */
    int64_t node_monitor_grace_period;     /* nodelifecycle's; 0: its default */
    const char *cluster_cidr;              /* nodeipam's; NULL: its default */
    int node_cidr_mask_size;               /* nodeipam's; 0: its default */
    int64_t resource_quota_sync_period;    /* resourcequota's, ns; 0: its default */
    struct ck_hpa_options hpa;             /* horizontalpodautoscaling's; zeros: defaults */
    const char *cluster_signing_cert_file; /* csrsigning's CA; NULL: not started */
    const char *cluster_signing_key_file;
    long long cluster_signing_duration; /* csrsigning's, s; 0: one year */
};

/* One row of the table. */
struct ck_controller_descriptor {
    const char *name; /* as --controllers spells it: "replicaset" */
    /*
     * Kubernetes' canonical name when it differs ("node-ipam-controller"), which
     * --controllers accepts as well; NULL: none.
     */
    const char *kube_name;
    bool enabled_by_default; /* turned on by "*" */
    /* the identity it acts as when not the controller manager's, or NULL */
    const char *user;
    /*
     * Creates the controller and registers its handlers and indexes with ctx->factory's
     * informers (before they start). Returns 0 and sets *ret_state, or a negative code.
     */
    int (*start)(const struct ck_controller_context *ctx, void **ret_state, struct ck_err *reterr);
    /* Waits for its caches and starts its workers; runs on the manager's starter thread. */
    int (*run)(void *state, int workers, struct ck_err *reterr);
    /* Stops its workers and frees it (the informers are stopped already). NULL: no-op. */
    void (*stop)(void *state);
    /* NAME of its --concurrent-NAME-syncs flag ("gc"), NULL: none */
    const char *syncs_flag;
    /* workers when the flag is not given; 0: CK_CONTROLLER_DEFAULT_WORKERS */
    int default_workers;
};

/* The table: every controller the manager knows, in start order (static storage). */
const struct ck_controller_descriptor *ck_controller_manager_table(size_t *ret_n);

/*
 * The known names for help texts, comma-separated, those off by default marked "(off by
 * default)": "replicaset". Writes into buf (truncating) and returns it; a buffer of
 * CK_CONTROLLER_MANAGER_KNOWN_SIZE holds the whole list.
 */
#define CK_CONTROLLER_MANAGER_KNOWN_SIZE 1024
const char *ck_controller_manager_known(char *buf, size_t size);

/*
 * The workers config gives the controller of row d, else the row's default. Unknown
 * names in config are ignored here (ck_controller_manager_start refuses them).
 */
int ck_controller_manager_workers(const struct ck_controller_manager_config *config,
                                  const struct ck_controller_descriptor *d);

/*
 * Checks a --controllers value: 0, or CK_EINVAL naming the unknown controller
 * ("\"x\" is not in the list of known controllers").
 */
int ck_controller_manager_check(const char *selection, struct ck_err *reterr);

/*
 * Whether selection turns controller name on ("*" does for every controller on by
 * default). Unknown names are never on.
 */
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
