/*
 * ckube/job.h - the Job controller (kubernetes pkg/controller/job) and the
 * TTL-after-finished controller (pkg/controller/ttlafterfinished).
 *
 * The Job controller runs a Job's pods to completion: it keeps
 * min(parallelism, remaining completions) pods active, creates them from the
 * template with the batch.kubernetes.io/job-tracking finalizer (and, for an
 * Indexed Job, the batch.kubernetes.io/job-completion-index annotation and
 * label, the hostname <job>-<index> and the JOB_COMPLETION_INDEX variable),
 * counts every finished pod exactly once through status.uncountedTerminatedPods
 * before it removes the pod's finalizer, delays replacements of failed pods by
 * 10 s doubling up to 6 min, applies the pod failure policy, the back-off limit
 * and the active deadline, and writes status (active, ready, terminating,
 * succeeded, failed, completedIndexes, startTime, completionTime) with the
 * conditions 1.32 writes: SuccessCriteriaMet then Complete, FailureTarget then
 * Failed (BackoffLimitExceeded, DeadlineExceeded, PodFailurePolicy), Suspended.
 *
 * The TTL-after-finished controller deletes a finished Job (with its pods, in
 * the foreground) ttlSecondsAfterFinished after it finished.
 *
 * Both read only through listers and write only through a client interface
 * (controllers.h), so unit tests drive them on fakes with a fake wall clock.
 */
#ifndef CKUBE_JOB_H
#define CKUBE_JOB_H

#include "ckube/controllers.h"
#include "ckube/informer.h"

/* The pod finalizer that keeps a finished pod until the Job has counted it. */
#define CK_JOB_TRACKING_FINALIZER "batch.kubernetes.io/job-tracking"
/* The annotation and label carrying an Indexed Job pod's index. */
#define CK_JOB_COMPLETION_INDEX "batch.kubernetes.io/job-completion-index"
/* DefaultJobPodFailureBackOff and MaxJobPodFailureBackOff. */
#define CK_JOB_BACKOFF_BASE (10 * CK_SEC)
#define CK_JOB_BACKOFF_MAX  (360 * CK_SEC)
/* MaxPodCreateDeletePerSync and MaxUncountedPods. */
#define CK_JOB_MAX_CREATE_DELETE_PER_SYNC 500
#define CK_JOB_MAX_UNCOUNTED_PODS         500

struct ck_job_controller;

/*
 * Creates the Job controller and registers its handlers on the factory's informers
 * (jobs and pods); call before ck_informer_factory_start(). client and factory are
 * borrowed and must outlive it. clock NULL = real.
 */
int ck_job_controller_new(struct ck_rest *client, struct ck_informer_factory *factory,
                          struct ck_clock *clock, struct ck_job_controller **ret_c,
                          struct ck_err *reterr);

/* Waits for the informers to sync, then starts `workers` workers (Kubernetes: 5). */
int ck_job_controller_run(struct ck_job_controller *c, int workers, struct ck_err *reterr);

/* Stops the workers and frees the controller (stop the factory's informers first). */
struct ck_job_controller *ck_job_controller_free(struct ck_job_controller *c);

/* What the controller reads and writes through, for unit tests. Every pointer is borrowed. */
struct ck_job_controller_deps {
    const struct ck_ctl_client *client; /* copied; what it points to must outlive c */
    const struct ck_lister *jobs;       /* copied; ditto */
    const struct ck_lister *pods;       /* copied; ditto */
    struct ck_clock *clock;             /* the queue's clock; NULL = real */
    /* The wall clock, nanoseconds since the Unix epoch; NULL = the real time. */
    int64_t (*now)(void *arg);
    void *now_arg;
    bool async_events; /* false: events are written on the syncing thread */
};

/* The controller on deps, without informers (drive it with ck_job_controller_sync()). */
int ck_job_controller_new_with(const struct ck_job_controller_deps *deps,
                               struct ck_job_controller **ret_c, struct ck_err *reterr);

/* One sync of key ("namespace/name") on the calling thread (syncJob). */
int ck_job_controller_sync(struct ck_job_controller *c, const char *key, struct ck_err *reterr);

/* The controller's handlers for Jobs and for pods. */
void ck_job_controller_handlers(struct ck_job_controller *c, struct ck_event_handler *ret_jobs,
                                struct ck_event_handler *ret_pods);

/* The work queue (borrowed): tests read what was added, and after how long. */
struct ck_wq *ck_job_controller_queue(struct ck_job_controller *c);

/* The expectations (borrowed). */
struct ck_expectations *ck_job_controller_expectations(struct ck_job_controller *c);

/* ---- TTL after finished ------------------------------------------------------------ */

struct ck_ttl_controller;

int ck_ttl_controller_new(struct ck_rest *client, struct ck_informer_factory *factory,
                          struct ck_clock *clock, struct ck_ttl_controller **ret_c,
                          struct ck_err *reterr);
int ck_ttl_controller_run(struct ck_ttl_controller *c, int workers, struct ck_err *reterr);
struct ck_ttl_controller *ck_ttl_controller_free(struct ck_ttl_controller *c);

/* For unit tests: the controller over a Job lister and a client, with a wall clock. */
int ck_ttl_controller_new_with(const struct ck_job_controller_deps *deps,
                               struct ck_ttl_controller **ret_c, struct ck_err *reterr);

/*
 * One sync of key: deletes the Job when its TTL has run out, else (when it has one and
 * is finished) sets *ret_requeue_after (ns; may be NULL) to the time left.
 */
int ck_ttl_controller_sync(struct ck_ttl_controller *c, const char *key, int64_t *ret_requeue_after,
                           struct ck_err *reterr);

#endif /* CKUBE_JOB_H */
