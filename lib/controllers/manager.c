/*
 * manager.c - runs a selection of controllers against one API server (the core of
 * kube-controller-manager: --controllers, one shared informer factory, start when the
 * caches have synced).
 *
 * The controllers are the rows of `table` (NewControllerDescriptors): name, on by
 * default or not, and start/run/stop. Nothing else in this file names a controller.
 *
 * The selection follows Kubernetes' --controllers: a comma-separated list where "*"
 * enables every controller that is on by default, "name" enables one and "-name"
 * disables one; an unknown name is an error.
 *
 * Start never blocks on the server: every selected controller's start registers its
 * handlers, the informers start, and a starter thread waits for them to sync and then
 * runs each controller's workers, so a controller manager started before its server
 * simply begins when the server answers (the reflectors back off meanwhile).
 *
 * Threading: start and free from one thread; the starter thread is joined by free.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/cronjob.h"
#include "ckube/csrcontrollers.h"
#include "ckube/daemonset.h"
#include "ckube/deployment.h"
#include "ckube/disruption.h"
#include "ckube/endpointslice.h"
#include "ckube/endpointslicemirroring.h"
#include "ckube/garbagecollector.h"
#include "ckube/internal/util.h"
#include "ckube/job.h"
#include "ckube/manager.h"
#include "ckube/nodeipam.h"
#include "ckube/nodelifecycle.h"
#include "ckube/nscontroller.h"
#include "ckube/persistentvolume.h"
#include "ckube/podautoscaler.h"
#include "ckube/replicaset.h"
#include "ckube/resourcequota.h"
#include "ckube/rootcacertpublisher.h"
#include "ckube/sacontroller.h"
#include "ckube/scheduler.h"
#include "ckube/statefulset.h"

/* ---- the table ---------------------------------------------------------------------- */

static int rs_start(const struct ck_controller_context *ctx, void **ret_state,
                    struct ck_err *reterr)
{
    struct ck_rs_controller *c = NULL;
    int r = ck_rs_controller_new(ctx->client, ctx->factory, NULL, &c, reterr);
    if (r == 0)
        *ret_state = c;
    return r;
}

static int rs_run(void *state, int workers, struct ck_err *reterr)
{
    return ck_rs_controller_run(state, workers, reterr);
}

static void rs_stop(void *state)
{
    ck_rs_controller_free(state);
}

static int rc_start(const struct ck_controller_context *ctx, void **ret_state,
                    struct ck_err *reterr)
{
    struct ck_rs_controller *c = NULL;
    int r = ck_rs_controller_new_for(&ck_rs_kind_replicationcontroller, ctx->client, ctx->factory,
                                     NULL, &c, reterr);
    if (r == 0)
        *ret_state = c;
    return r;
}

static int job_start(const struct ck_controller_context *ctx, void **ret_state,
                     struct ck_err *reterr)
{
    struct ck_job_controller *c = NULL;
    int r = ck_job_controller_new(ctx->client, ctx->factory, NULL, &c, reterr);
    if (r == 0)
        *ret_state = c;
    return r;
}

static int job_run(void *state, int workers, struct ck_err *reterr)
{
    return ck_job_controller_run(state, workers, reterr);
}

static void job_stop(void *state)
{
    ck_job_controller_free(state);
}

static int ttl_start(const struct ck_controller_context *ctx, void **ret_state,
                     struct ck_err *reterr)
{
    struct ck_ttl_controller *c = NULL;
    int r = ck_ttl_controller_new(ctx->client, ctx->factory, NULL, &c, reterr);
    if (r == 0)
        *ret_state = c;
    return r;
}

static int ttl_run(void *state, int workers, struct ck_err *reterr)
{
    return ck_ttl_controller_run(state, workers, reterr);
}

static void ttl_stop(void *state)
{
    ck_ttl_controller_free(state);
}

static int quota_start(const struct ck_controller_context *ctx, void **ret_state,
                       struct ck_err *reterr)
{
    struct ck_resourcequota_controller *c = NULL;
    int r = ck_resourcequota_controller_new(ctx->client, ctx->factory,
                                            ctx->resource_quota_sync_period, &c, reterr);
    if (r == 0)
        *ret_state = c;
    return r;
}

static int quota_run(void *state, int workers, struct ck_err *reterr)
{
    return ck_resourcequota_controller_run(state, workers, reterr);
}

static void quota_stop(void *state)
{
    ck_resourcequota_controller_free(state);
}

static int hpa_start(const struct ck_controller_context *ctx, void **ret_state,
                     struct ck_err *reterr)
{
    struct ck_hpa_controller *c = NULL;
    int r = ck_hpa_controller_new(ctx->client, ctx->factory, &ctx->hpa, &c, reterr);
    if (r == 0)
        *ret_state = c;
    return r;
}

static int pv_binder_start(const struct ck_controller_context *ctx, void **ret_state,
                           struct ck_err *reterr)
{
    struct ck_pv_controller *c = NULL;
    int r = ck_pv_controller_new(ctx->client, ctx->factory, NULL, &c, reterr);
    if (r == 0)
        *ret_state = c;
    return r;
}

static int hpa_run(void *state, int workers, struct ck_err *reterr)
{
    return ck_hpa_controller_run(state, workers, reterr);
}

static void hpa_stop(void *state)
{
    ck_hpa_controller_free(state);
}

static int pv_binder_run(void *state, int workers, struct ck_err *reterr)
{
    return ck_pv_controller_run(state, workers, reterr);
}

static void pv_binder_stop(void *state)
{
    ck_pv_controller_free(state);
}

static int protection_start(enum ck_protected what, const struct ck_controller_context *ctx,
                            void **ret_state, struct ck_err *reterr)
{
    struct ck_protection_controller *c = NULL;
    int r = ck_protection_controller_new(what, ctx->client, ctx->factory, &c, reterr);
    if (r == 0)
        *ret_state = c;
    return r;
}

static int pvc_protection_start(const struct ck_controller_context *ctx, void **ret_state,
                                struct ck_err *reterr)
{
    return protection_start(CK_PROTECT_CLAIMS, ctx, ret_state, reterr);
}

static int pv_protection_start(const struct ck_controller_context *ctx, void **ret_state,
                               struct ck_err *reterr)
{
    return protection_start(CK_PROTECT_VOLUMES, ctx, ret_state, reterr);
}

static int protection_run(void *state, int workers, struct ck_err *reterr)
{
    return ck_protection_controller_run(state, workers, reterr);
}

static void protection_stop(void *state)
{
    ck_protection_controller_free(state);
}

static int cronjob_start(const struct ck_controller_context *ctx, void **ret_state,
                         struct ck_err *reterr)
{
    struct ck_cronjob_controller *c = NULL;
    int r = ck_cronjob_controller_new(ctx->client, ctx->factory, NULL, &c, reterr);
    if (r == 0)
        *ret_state = c;
    return r;
}

static int cronjob_run(void *state, int workers, struct ck_err *reterr)
{
    return ck_cronjob_controller_run(state, workers, reterr);
}

static void cronjob_stop(void *state)
{
    ck_cronjob_controller_free(state);
}

static int deploy_start(const struct ck_controller_context *ctx, void **ret_state,
                        struct ck_err *reterr)
{
    struct ck_deploy_controller *c = NULL;
    int r = ck_deploy_controller_new(ctx->client, ctx->factory, NULL, &c, reterr);
    if (r == 0)
        *ret_state = c;
    return r;
}

static int deploy_run(void *state, int workers, struct ck_err *reterr)
{
    return ck_deploy_controller_run(state, workers, reterr);
}

static void deploy_stop(void *state)
{
    ck_deploy_controller_free(state);
}

static const struct ck_controller_descriptor table[] = {
    /* worker defaults and flag names as kube-controller-manager 1.32's */
    {.name = "replicaset",
     .enabled_by_default = true,
     .start = rs_start,
     .run = rs_run,
     .stop = rs_stop,
     .syncs_flag = "replicaset",
     .default_workers = 5},
    {.name = "deployment",
     .enabled_by_default = true,
     .start = deploy_start,
     .run = deploy_run,
     .stop = deploy_stop,
     .syncs_flag = "deployment",
     .default_workers = 5},
    {.name = "replicationcontroller",
     .enabled_by_default = true,
     .start = rc_start,
     .run = rs_run,
     .stop = rs_stop,
     .syncs_flag = "rc",
     .default_workers = 5},
    {.name = "job",
     .enabled_by_default = true,
     .start = job_start,
     .run = job_run,
     .stop = job_stop,
     .syncs_flag = "job",
     .default_workers = 5},
    {.name = "ttl-after-finished",
     .enabled_by_default = true,
     .start = ttl_start,
     .run = ttl_run,
     .stop = ttl_stop,
     .syncs_flag = "ttl-after-finished",
     .default_workers = 5},
    {.name = "cronjob",
     .enabled_by_default = true,
     .start = cronjob_start,
     .run = cronjob_run,
     .stop = cronjob_stop,
     .syncs_flag = "cron-job",
     .default_workers = 5},
    {.name = "garbagecollector",
     .enabled_by_default = true,
     .start = ck_gc_manager_start,
     .run = ck_gc_manager_run,
     .stop = ck_gc_manager_stop,
     .syncs_flag = "gc",
     .default_workers = CK_GC_CONCURRENT_SYNCS},
    {.name = "namespace",
     .enabled_by_default = true,
     .start = ck_ns_manager_start,
     .run = ck_ns_manager_run,
     .stop = ck_ns_manager_stop,
     .syncs_flag = "namespace",
     .default_workers = 10},
    {.name = "nodelifecycle",
     .enabled_by_default = true,
     .start = ck_nodelifecycle_manager_start,
     .run = ck_nodelifecycle_manager_run,
     .stop = ck_nodelifecycle_manager_stop},
    {.name = "nodeipam",
     .kube_name = "node-ipam-controller",
     .enabled_by_default = true,
     .start = ck_nodeipam_manager_start,
     .run = ck_nodeipam_manager_run,
     .stop = ck_nodeipam_manager_stop,
     .default_workers = 1},
    {.name = "statefulset",
     .enabled_by_default = true,
     .start = ck_sts_manager_start,
     .run = ck_sts_manager_run,
     .stop = ck_sts_manager_stop,
     .syncs_flag = "statefulset",
     .default_workers = 5},
    {.name = "daemonset",
     .enabled_by_default = true,
     .start = ck_ds_manager_start,
     .run = ck_ds_manager_run,
     .stop = ck_ds_manager_stop,
     .syncs_flag = "daemonset",
     .default_workers = 2},
    {.name = "disruption",
     .enabled_by_default = true,
     .start = ck_disruption_manager_start,
     .run = ck_disruption_manager_run,
     .stop = ck_disruption_manager_stop},
    {.name = "horizontalpodautoscaling",
     .kube_name = "horizontal-pod-autoscaler-controller",
     .enabled_by_default = true,
     .start = hpa_start,
     .run = hpa_run,
     .stop = hpa_stop,
     .syncs_flag = "horizontal-pod-autoscaler",
     .default_workers = 5},
    {.name = "scheduler",
     .enabled_by_default = true,
     .user = "system:kube-scheduler",
     .start = ck_scheduler_manager_start,
     .run = ck_scheduler_manager_run,
     .stop = ck_scheduler_manager_stop},
    {.name = "serviceaccount",
     .enabled_by_default = true,
     .start = ck_sa_manager_start,
     .run = ck_sa_manager_run,
     .stop = ck_sa_manager_stop},
    {.name = "root-ca-cert-publisher",
     .kube_name = "root-ca-certificate-publisher-controller",
     .enabled_by_default = true,
     .start = ck_root_ca_manager_start,
     .run = ck_root_ca_manager_run,
     .stop = ck_root_ca_manager_stop},
    {.name = "endpointslice",
     .enabled_by_default = true,
     .start = ck_eps_manager_start,
     .run = ck_eps_manager_run,
     .stop = ck_eps_manager_stop,
     .syncs_flag = "service-endpoint",
     .default_workers = 5},
    {.name = "endpointslicemirroring",
     .kube_name = "endpointslice-mirroring-controller",
     .enabled_by_default = true,
     .start = ck_mirroring_manager_start,
     .run = ck_mirroring_manager_run,
     .stop = ck_mirroring_manager_stop,
     .default_workers = 5},
    {.name = "persistentvolume-binder",
     .kube_name = "persistentvolume-binder-controller",
     .enabled_by_default = true,
     .start = pv_binder_start,
     .run = pv_binder_run,
     .stop = pv_binder_stop,
     .default_workers = 2},
    {.name = "pvc-protection",
     .kube_name = "persistentvolumeclaim-protection-controller",
     .enabled_by_default = true,
     .start = pvc_protection_start,
     .run = protection_run,
     .stop = protection_stop,
     .default_workers = 1},
    {.name = "pv-protection",
     .kube_name = "persistentvolume-protection-controller",
     .enabled_by_default = true,
     .start = pv_protection_start,
     .run = protection_run,
     .stop = protection_stop,
     .default_workers = 1},
    {.name = "resourcequota",
     .kube_name = "resourcequota-controller",
     .enabled_by_default = true,
     .start = quota_start,
     .run = quota_run,
     .stop = quota_stop,
     .syncs_flag = "resource-quota",
     .default_workers = 5},
    {.name = "csrsigning",
     .kube_name = "certificatesigningrequest-signing-controller",
     .enabled_by_default = true,
     .start = ck_csrsigning_manager_start,
     .run = ck_csr_manager_run,
     .stop = ck_csr_manager_stop,
     .default_workers = 5},
    {.name = "csrapproving",
     .kube_name = "certificatesigningrequest-approving-controller",
     .enabled_by_default = true,
     .start = ck_csrapproving_manager_start,
     .run = ck_csr_manager_run,
     .stop = ck_csr_manager_stop,
     .default_workers = 5},
    {.name = "csrcleaner",
     .kube_name = "certificatesigningrequest-cleaner-controller",
     .enabled_by_default = true,
     .start = ck_csrcleaner_manager_start,
     .run = ck_csr_manager_run,
     .stop = ck_csr_manager_stop,
     .default_workers = 1},
};

#define N_CONTROLLERS (sizeof(table) / sizeof(table[0]))

const struct ck_controller_descriptor *ck_controller_manager_table(size_t *ret_n)
{
    *ret_n = N_CONTROLLERS;
    return table;
}

const char *ck_controller_manager_known(char *buf, size_t size)
{
    size_t len = 0;
    if (size)
        buf[0] = '\0';
    for (size_t i = 0; i < N_CONTROLLERS && len < size; i++) {
        int n = snprintf(buf + len, size - len, "%s%s%s", i ? ", " : "", table[i].name,
                         table[i].enabled_by_default ? "" : " (off by default)");
        len += n > 0 ? (size_t)n : 0;
    }
    return buf;
}

static bool named(const char *candidate, const char *name, size_t len)
{
    return candidate && strlen(candidate) == len && strncmp(candidate, name, len) == 0;
}

/* The row name[0..len) names, by its name or its Kubernetes name, or NULL. */
static const struct ck_controller_descriptor *lookup(const char *name, size_t len)
{
    for (size_t i = 0; i < N_CONTROLLERS; i++)
        if (named(table[i].name, name, len) || named(table[i].kube_name, name, len))
            return &table[i];
    return NULL;
}

int ck_controller_manager_workers(const struct ck_controller_manager_config *config,
                                  const struct ck_controller_descriptor *d)
{
    for (size_t i = 0; config && i < config->n_workers; i++)
        if (strcmp(config->workers[i].controller, d->name) == 0)
            return config->workers[i].workers;
    return d->default_workers > 0 ? d->default_workers : CK_CONTROLLER_DEFAULT_WORKERS;
}

/* ---- the selection ------------------------------------------------------------------- */

int ck_controller_manager_check(const char *selection, struct ck_err *reterr)
{
    for (const char *p = selection ? selection : "*"; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *name = p[0] == '-' ? p + 1 : p;
        size_t name_len = p[0] == '-' ? len - 1 : len;
        if (len && !(len == 1 && p[0] == '*') && !lookup(name, name_len)) {
            char known[CK_CONTROLLER_MANAGER_KNOWN_SIZE];
            return ck_err_set(
                reterr, CK_EINVAL, "\"%.*s\" is not in the list of known controllers (%s)",
                (int)name_len, name, ck_controller_manager_known(known, sizeof(known)));
        }
        p += len + (end ? 1 : 0);
    }
    return 0;
}

bool ck_controller_manager_enabled(const char *selection, const char *name)
{
    /* Kubernetes' IsControllerEnabled: the first item naming it wins, else "*" */
    const struct ck_controller_descriptor *d = lookup(name, strlen(name));
    if (!d)
        return false;
    bool star = false;
    for (const char *p = selection ? selection : "*"; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len && lookup(p, len) == d) /* either of its names */
            return true;
        if (len > 1 && p[0] == '-' && lookup(p + 1, len - 1) == d)
            return false;
        star = star || (len == 1 && p[0] == '*');
        p += len + (end ? 1 : 0);
    }
    return star && d->enabled_by_default;
}

/* ---- the manager --------------------------------------------------------------------- */

struct ck_controller_manager {
    struct ck_informer_factory *factory;
    bool own_factory;            /* else the config's, shared: never stopped here */
    atomic_bool stopping;        /* ends the starter's wait on a shared factory */
    void *states[N_CONTROLLERS]; /* NULL: not selected (or not started) */
    int workers[N_CONTROLLERS];
    pthread_t starter;
    bool starter_running;
};

static void *starter_main(void *arg)
{
    struct ck_controller_manager *cm = arg;
    /*
     * A shared factory is not stopped when the manager is: wait for its caches here, in
     * slices that notice the manager stopping, so that the controllers' own waits below
     * find them synced (an own factory's stop ends those waits by itself).
     */
    while (!cm->own_factory && !atomic_load(&cm->stopping) &&
           !ck_informer_factory_wait_for_sync(cm->factory, ck_clock_now(NULL) + CK_SEC / 10))
        ;
    for (size_t i = 0; i < N_CONTROLLERS && !atomic_load(&cm->stopping); i++) {
        struct ck_err err = {0};
        if (cm->states[i] && table[i].run(cm->states[i], cm->workers[i], &err) < 0)
            CK_LOGV(1, "controller manager: %s not started: %s", table[i].name, err.msg);
    }
    return NULL;
}

int ck_controller_manager_start(const struct ck_controller_manager_config *config,
                                struct ck_controller_manager **ret_cm, struct ck_err *reterr)
{
    int r = ck_controller_manager_check(config->controllers, reterr);
    for (size_t i = 0; r == 0 && i < config->n_workers; i++)
        if (!lookup(config->workers[i].controller, strlen(config->workers[i].controller)) ||
            config->workers[i].workers < 1)
            r = ck_err_set(reterr, CK_EINVAL, "invalid worker count %d for controller \"%s\"",
                           config->workers[i].workers, config->workers[i].controller);
    if (r < 0)
        return r;
    struct ck_controller_manager *cm = ck__calloc(1, sizeof(*cm));
    if (!cm)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    cm->factory = config->factory;
    cm->own_factory = !config->factory;
    if (cm->own_factory) {
        r = ck_informer_factory_new(config->client, NULL, 0, NULL, &cm->factory, reterr);
        if (r == 0) /* as kube-controller-manager's informers: no controller reads them */
            ck_informer_factory_set_transform(cm->factory, ck_transform_strip_managed_fields, NULL);
    }
    /* every handler the controllers add from here is the manager's, removed when it stops */
    if (r == 0 && !cm->own_factory)
        ck_informer_factory_own_begin(cm->factory, cm);
    for (size_t i = 0; i < N_CONTROLLERS && r == 0; i++) {
        bool on = ck_controller_manager_enabled(config->controllers, table[i].name);
        cm->workers[i] = ck_controller_manager_workers(config, &table[i]);
        struct ck_controller_context own = {config->client,
                                            cm->factory,
                                            cm->workers[i],
                                            config->node_monitor_grace_period,
                                            config->cluster_cidr,
                                            config->node_cidr_mask_size,
                                            config->resource_quota_sync_period,
                                            config->hpa,
                                            config->cluster_signing_cert_file,
                                            config->cluster_signing_key_file,
                                            config->cluster_signing_duration};
        if (on && table[i].user && config->client_for) {
            struct ck_rest *client = config->client_for(config->client_for_arg, table[i].user);
            own.client = client ? client : config->client;
        }
        if (on)
            r = table[i].start(&own, &cm->states[i], reterr);
        CK_LOGS(0, "Controller", "name", table[i].name, "enabled", on ? "true" : "false");
    }
    if (!cm->own_factory)
        ck_informer_factory_own_end(cm->factory);
    if (r == 0)
        r = ck_informer_factory_start(cm->factory, reterr);
    if (r == 0) {
        if (pthread_create(&cm->starter, NULL, starter_main, cm) == 0)
            cm->starter_running = true;
        else
            r = ck_err_set(reterr, CK_ENOMEM, "cannot start the controller manager");
    }
    if (r < 0) {
        ck_controller_manager_free(cm);
        return r;
    }
    *ret_cm = cm;
    return 0;
}

struct ck_controller_manager *ck_controller_manager_free(struct ck_controller_manager *cm)
{
    if (!cm)
        return NULL;
    atomic_store(&cm->stopping, true);
    if (cm->own_factory) /* also ends a starter still waiting for sync */
        ck_informer_factory_stop(cm->factory);
    if (cm->starter_running)
        pthread_join(cm->starter, NULL);
    if (!cm->own_factory && cm->factory) /* none of the controllers is called after this */
        ck_informer_factory_release(cm->factory, cm);
    for (size_t i = N_CONTROLLERS; i-- > 0;)
        if (cm->states[i] && table[i].stop)
            table[i].stop(cm->states[i]);
    if (cm->own_factory)
        ck_informer_factory_free(cm->factory);
    free(cm);
    return NULL;
}
