/*
 * ckube/scheduler.h - the scheduler: assigns pending pods to nodes (kube-scheduler).
 *
 * For pods whose spec.schedulerName is the scheduler's ("default-scheduler") and that
 * have no spec.nodeName, it picks a node with the default profile's filters and scores
 * and binds the pod there through pods/binding; a pod that fits nowhere gets the
 * PodScheduled=False condition (reason Unschedulable) and a FailedScheduling event with
 * Kubernetes' message, and is retried when a node, or a pod leaving a node, changes.
 * docs/internals/scheduler.md describes the design.
 *
 * It runs in `ckube server` (the controller manager's row "scheduler") or alone in
 * `ckube scheduler --kubeconfig FILE`. It talks only to the API server.
 */
#ifndef CKUBE_SCHEDULER_H
#define CKUBE_SCHEDULER_H

#include <stdint.h>

#include "ckube/informer.h"
#include "ckube/manager.h"
#include "ckube/rest.h"

/* The name pods ask for by default (spec.schedulerName). */
#define CK_SCHEDULER_DEFAULT_NAME "default-scheduler"

/* kube-scheduler's client defaults (--kube-api-qps, --kube-api-burst). */
#define CK_SCHEDULER_QPS   50.0
#define CK_SCHEDULER_BURST 100

struct ck_scheduler_config {
    struct ck_rest *client; /* borrowed; must outlive the scheduler */
    /* the informer factory to share (maybe running already), or NULL for its own */
    struct ck_informer_factory *factory;
    const char *scheduler_name; /* NULL: CK_SCHEDULER_DEFAULT_NAME */
    int bind_workers;           /* bindings in flight at once; 0: 16 */
    struct ck_clock *clock;     /* NULL: real */
};

struct ck_scheduler;

/*
 * Creates the scheduler and registers its informers' handlers (pods and nodes). Returns
 * 0 and sets *ret, or a negative code.
 */
int ck_scheduler_new(const struct ck_scheduler_config *config, struct ck_scheduler **ret,
                     struct ck_err *reterr);

/*
 * Starts its own factory (when it has one), waits for the caches and starts scheduling
 * in the background. Returns 0, or CK_ESHUTDOWN when the informers stopped first.
 */
int ck_scheduler_run(struct ck_scheduler *s, struct ck_err *reterr);

/*
 * Stops the scheduler's own informers, so that a ck_scheduler_run() waiting for their
 * sync on another thread returns CK_ESHUTDOWN. No-op with a shared factory.
 */
void ck_scheduler_stop_informers(struct ck_scheduler *s);

/* Stops scheduling and binding (bindings in flight finish) and frees. NULL: no-op. */
struct ck_scheduler *ck_scheduler_free(struct ck_scheduler *s);

struct ck_scheduler_stats {
    uint64_t attempts;      /* scheduling cycles */
    uint64_t scheduled;     /* bindings that succeeded */
    uint64_t unschedulable; /* cycles that found no node */
    uint64_t bind_errors;   /* bindings the server refused */
    uint64_t preempted;     /* pods evicted to make room for higher-priority ones */
    int64_t cycle_nanos;    /* time spent in scheduling cycles (filter, score, assume) */
};
void ck_scheduler_stats(struct ck_scheduler *s, struct ck_scheduler_stats *ret);

/* The controller manager's row: start, run, stop (see ckube/manager.h). */
int ck_scheduler_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                               struct ck_err *reterr);
int ck_scheduler_manager_run(void *state, int workers, struct ck_err *reterr);
void ck_scheduler_manager_stop(void *state);

#endif /* CKUBE_SCHEDULER_H */
