/*
 * deployment.h - private to libckube-controllers, never installed: the Deployment
 * controller's decisions as pure functions over JSON objects.
 *
 * Mirrors kubernetes 1.32 pkg/controller/deployment: util/deployment_util.go (util.c),
 * rolling.go (rolling.c), recreate.go (recreate.c), sync.go (sync.c), progress.go
 * (progress.c) and rollback.go (rollback.c). Every function here only reads its inputs
 * and returns numbers, decisions or new objects: none talks to the API server, logs or
 * reads the clock. The time is always a parameter, `now_ns`, nanoseconds since the Unix
 * epoch, so tests pin it. The sync loop that applies these decisions lives elsewhere.
 *
 * Conventions:
 *   - Deployments, ReplicaSets and pods are jansson objects as the API serves them.
 *   - A list of ReplicaSets is `const json_t *const *rss, size_t n`; NULL entries are
 *     skipped as Kubernetes skips nil pointers. Functions never reorder the caller's
 *     array; where Kubernetes sorts, they sort a private copy or an index.
 *   - Per-ReplicaSet results come back in caller-provided arrays parallel to the
 *     input (`int32_t ret_sizes[n]`: the spec.replicas each ReplicaSet should have).
 *   - A `json_t *` returned is a new reference the caller owns (json_decref); a
 *     `const json_t *` returned is borrowed from an input.
 *   - spec.replicas missing reads as 1 (the API default); counters missing read as 0.
 *
 * Threading: no state; safe from any thread on objects nobody else mutates.
 */
#ifndef CKUBE_CONTROLLERS_DEPLOYMENT_H
#define CKUBE_CONTROLLERS_DEPLOYMENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CK_DEPLOY_REVISION_ANNOTATION         "deployment.kubernetes.io/revision"
#define CK_DEPLOY_REVISION_HISTORY_ANNOTATION "deployment.kubernetes.io/revision-history"
#define CK_DEPLOY_DESIRED_REPLICAS_ANNOTATION "deployment.kubernetes.io/desired-replicas"
#define CK_DEPLOY_MAX_REPLICAS_ANNOTATION     "deployment.kubernetes.io/max-replicas"
#define CK_DEPLOY_CHANGE_CAUSE_ANNOTATION     "kubernetes.io/change-cause"
#define CK_DEPLOY_LAST_APPLIED_ANNOTATION     "kubectl.kubernetes.io/last-applied-configuration"
#define CK_DEPLOY_ROLLBACK_TO_ANNOTATION      "deprecated.deployment.rollback.to"
#define CK_DEPLOY_HASH_LABEL                  "pod-template-hash"

/* sync.go's maxRevHistoryLengthInChars: the cap on the revision-history annotation. */
#define CK_DEPLOY_MAX_REV_HISTORY_CHARS 2000

/* Condition types and reasons (apps/v1 and deployment_util.go). */
#define CK_DEPLOY_COND_AVAILABLE       "Available"
#define CK_DEPLOY_COND_PROGRESSING     "Progressing"
#define CK_DEPLOY_COND_REPLICA_FAILURE "ReplicaFailure"

#define CK_DEPLOY_REASON_RS_UPDATED         "ReplicaSetUpdated"
#define CK_DEPLOY_REASON_FAILED_RS_CREATE   "ReplicaSetCreateError"
#define CK_DEPLOY_REASON_NEW_RS             "NewReplicaSetCreated"
#define CK_DEPLOY_REASON_FOUND_NEW_RS       "FoundNewReplicaSet"
#define CK_DEPLOY_REASON_NEW_RS_AVAILABLE   "NewReplicaSetAvailable"
#define CK_DEPLOY_REASON_TIMED_OUT          "ProgressDeadlineExceeded"
#define CK_DEPLOY_REASON_PAUSED             "DeploymentPaused"
#define CK_DEPLOY_REASON_RESUMED            "DeploymentResumed"
#define CK_DEPLOY_REASON_MIN_AVAILABLE      "MinimumReplicasAvailable"
#define CK_DEPLOY_REASON_MIN_UNAVAILABLE    "MinimumReplicasUnavailable"
#define CK_DEPLOY_REASON_ROLLBACK_NOT_FOUND "DeploymentRollbackRevisionNotFound"
#define CK_DEPLOY_REASON_ROLLBACK_UNCHANGED "DeploymentRollbackTemplateUnchanged"
#define CK_DEPLOY_REASON_ROLLBACK_DONE      "DeploymentRollback"

#define CK_DEPLOY_NS_PER_SEC 1000000000LL

/* ---- small accessors (util.c) -------------------------------------------- */

/* spec.replicas of a Deployment or ReplicaSet; 1 when absent (the API default). */
int32_t ck__deploy_spec_replicas(const json_t *obj);
/* status.<field> as an int32; 0 when absent. */
int32_t ck__deploy_status_count(const json_t *obj, const char *field);
/* metadata.name, metadata.uid, or an annotation's value; NULL when absent. */
const char *ck__deploy_name(const json_t *obj);
const char *ck__deploy_uid(const json_t *obj);
const char *ck__deploy_annotation(const json_t *obj, const char *key);
/* obj[key] as an object, created (replacing anything else there) when it is not one. */
json_t *ck__deploy_child(json_t *obj, const char *key);
/*
 * Parses an RFC 3339 time (ck__time_parse: optional fraction and offset) into nanoseconds since
 * the epoch. Returns 0, or CK_EINVAL leaving *ret_ns alone.
 */
int ck__deploy_parse_time(const char *s, int64_t *ret_ns);
/* metadata.creationTimestamp in nanoseconds; 0 when absent or malformed (Go's zero). */
int64_t ck__deploy_creation_ns(const json_t *obj);

/* ---- strategy arithmetic (util.c) ------------------------------------------ */

/*
 * intstr.GetScaledValueFromIntOrPercent: an integer is itself; "N%" is N% of total,
 * rounded up or down. NULL reads as 0. Returns 0, or CK_EINVAL for anything else.
 */
int ck__deploy_intstr_value(const json_t *v, int32_t total, bool round_up, int32_t *ret);
/*
 * ResolveFenceposts: maxSurge rounds up, maxUnavailable rounds down, and when both come
 * to zero maxUnavailable becomes 1. Returns 0, or CK_EINVAL (outputs then 0).
 */
int ck__deploy_resolve_fenceposts(const json_t *max_surge, const json_t *max_unavailable,
                                  int32_t desired, int32_t *ret_surge, int32_t *ret_unavailable);
bool ck__deploy_is_rolling_update(const json_t *d);
/* MaxSurge, MaxUnavailable (capped at spec.replicas) and MinAvailable; 0 unless rolling. */
int32_t ck__deploy_max_surge(const json_t *d);
int32_t ck__deploy_max_unavailable(const json_t *d);
int32_t ck__deploy_min_available(const json_t *d);
/*
 * NewRSNewReplicas: the size new_rs should reach now: within the surge for a rolling
 * update, spec.replicas for Recreate. Returns 0, or CK_EINVAL for an unknown strategy
 * or a malformed maxSurge.
 */
int ck__deploy_new_rs_new_replicas(const json_t *d, const json_t *const *all, size_t n,
                                   const json_t *new_rs, int32_t *ret);
/* IsSaturated: new_rs has, wants and has available every replica the Deployment wants. */
bool ck__deploy_is_saturated(const json_t *d, const json_t *rs);

/* Sums of spec.replicas, status.replicas, status.readyReplicas, status.availableReplicas. */
int32_t ck__deploy_replica_count(const json_t *const *rss, size_t n);
int32_t ck__deploy_actual_replica_count(const json_t *const *rss, size_t n);
int32_t ck__deploy_ready_replica_count(const json_t *const *rss, size_t n);
int32_t ck__deploy_available_replica_count(const json_t *const *rss, size_t n);

bool ck__deploy_has_progress_deadline(const json_t *d);
bool ck__deploy_has_revision_history_limit(const json_t *d);

/* ---- revisions and annotations (util.c) ------------------------------------ */

/* Revision: the revision annotation as an int64, 0 when absent; CK_EINVAL if malformed. */
int ck__deploy_revision(const json_t *obj, int64_t *ret);
/* MaxRevision and LastRevision (the second largest); malformed revisions are skipped. */
int64_t ck__deploy_max_revision(const json_t *const *rss, size_t n);
int64_t ck__deploy_last_revision(const json_t *const *rss, size_t n);
/* annotationsToSkip: keys never copied between a Deployment and its ReplicaSets. */
bool ck__deploy_skip_copy_annotation(const char *key);
/*
 * SetNewReplicaSetAnnotations: copies d's annotations but the skipped ones, raises the
 * revision to new_revision when it is larger (appending the old one to revision-history
 * when there was one, dropping the oldest entries to stay within history_limit_chars),
 * and for a ReplicaSet not yet created (!exists) sets desired- and max-replicas.
 * Returns whether new_rs's annotations changed.
 */
bool ck__deploy_set_new_rs_annotations(const json_t *d, json_t *new_rs, const char *new_revision,
                                       bool exists, size_t history_limit_chars);
/* SetReplicasAnnotations: returns whether anything changed. */
bool ck__deploy_set_replicas_annotations(json_t *rs, int32_t desired, int32_t max);
bool ck__deploy_replicas_annotations_need_update(const json_t *rs, int32_t desired, int32_t max);
/* SetDeploymentRevision: returns whether it changed. */
bool ck__deploy_set_revision(json_t *d, const char *revision);
/* SetDeploymentAnnotationsTo: d keeps its skipped annotations and takes rs's others. */
void ck__deploy_set_annotations_to(json_t *d, const json_t *rs);
/*
 * The non-negative int32 value of an annotation: true and *ret on success, false (and
 * *ret 0) when absent, not a decimal number, negative or above INT32_MAX.
 */
bool ck__deploy_annotation_int32(const json_t *obj, const char *key, int32_t *ret);

/* ---- templates and the new/old split (util.c) -------------------------------- */

/* EqualIgnoreHash: the two pod templates are equal once pod-template-hash is removed. */
bool ck__deploy_equal_ignore_hash(const json_t *t1, const json_t *t2);
/*
 * FindNewReplicaSet: the oldest ReplicaSet whose template equals d's ignoring the hash
 * label (borrowed), or NULL.
 */
const json_t *ck__deploy_find_new_rs(const json_t *d, const json_t *const *rss, size_t n);
/*
 * FindOldReplicaSets: every ReplicaSet but the new one into ret_all (oldest first), and
 * those of them with spec.replicas != 0 into ret_required. Both arrays hold n entries.
 */
void ck__deploy_find_old_rss(const json_t *d, const json_t *const *rss, size_t n,
                             const json_t **ret_all, size_t *ret_n_all, const json_t **ret_required,
                             size_t *ret_n_required);
/*
 * FindActiveOrLatest: the only active (spec.replicas > 0) ReplicaSet, or the newest when
 * none is active; NULL when two or more are active (then scale proportionally).
 */
const json_t *ck__deploy_find_active_or_latest(const json_t *new_rs, const json_t *const *old,
                                               size_t n_old);
/* SetFromReplicaSetTemplate: d's template becomes a copy of tmpl minus pod-template-hash. */
void ck__deploy_set_from_rs_template(json_t *d, const json_t *tmpl);
/*
 * ComputeHash: the pod-template-hash of a template and status.collisionCount (NULL when
 * unset), in Kubernetes' alphabet. A canonical JSON of the template replaces Go's spew
 * output (see docs/differences.md). buf needs 11 bytes; returns buf.
 */
const char *ck__deploy_template_hash(const json_t *tmpl, const json_t *collision_count, char *buf,
                                     size_t size);

/* ---- proportions (util.c) ------------------------------------------------------ */

/*
 * GetReplicaSetProportion: how many replicas rs gains (or loses, negative) when to_add
 * replicas are spread over the active ReplicaSets and `added` were handed out already.
 */
int32_t ck__deploy_rs_proportion(const json_t *rs, const json_t *d, int32_t to_add, int32_t added);
/* getReplicaSetFraction: rs's share of the new size, by the max-replicas annotation. */
int32_t ck__deploy_rs_fraction(const json_t *rs, const json_t *d);

/* ---- progress predicates (util.c) ---------------------------------------------- */

/* DeploymentComplete: every replica updated and available, and observed. */
bool ck__deploy_complete(const json_t *d, const json_t *new_status);
/* DeploymentProgressing: new_status shows progress over d's status. */
bool ck__deploy_progressing(const json_t *d, const json_t *new_status);
/* DeploymentTimedOut: the Progressing condition of new_status is past the deadline. */
bool ck__deploy_timed_out(const json_t *d, const json_t *new_status, int64_t now_ns);

/* ---- conditions (util.c) ---------------------------------------------------------- */

/* NewDeploymentCondition, both times `now_ns` (whole seconds). New reference. */
json_t *ck__deploy_condition_new(const char *type, const char *status, const char *reason,
                                 const char *message, int64_t now_ns);
/* GetDeploymentCondition on a status object: borrowed, or NULL. */
const json_t *ck__deploy_condition_get(const json_t *status, const char *type);
/*
 * SetDeploymentCondition: no change when a condition of that type has the same status
 * and reason; else it replaces (and goes last), keeping the old lastTransitionTime when
 * the status is unchanged. Steals cond.
 */
void ck__deploy_condition_set(json_t *status, json_t *cond);
/* RemoveDeploymentCondition. */
void ck__deploy_condition_remove(json_t *status, const char *type);
/* ReplicaSetToDeploymentCondition: lastUpdateTime is the RS's lastTransitionTime. */
json_t *ck__deploy_condition_from_rs(const json_t *rs_cond);

/* ---- sorting (util.c) ----------------------------------------------------------- */

typedef int (*ck__deploy_rs_cmp)(const json_t *a, const json_t *b);
/* controller.ReplicaSetsByCreationTimestamp: older first, then by name. */
int ck__deploy_cmp_by_creation(const json_t *a, const json_t *b);
/* ReplicaSetsBySizeOlder / BySizeNewer: larger first; ties older / newer first. */
int ck__deploy_cmp_by_size_older(const json_t *a, const json_t *b);
int ck__deploy_cmp_by_size_newer(const json_t *a, const json_t *b);
/* ReplicaSetsByRevision: lower revision first; ties or bad revisions by creation. */
int ck__deploy_cmp_by_revision(const json_t *a, const json_t *b);
/* Sorts rss in place, stably. */
void ck__deploy_sort(const json_t **rss, size_t n, ck__deploy_rs_cmp cmp);

/* ---- rolling.c ------------------------------------------------------------------- */

/*
 * reconcileNewReplicaSet: the size new_rs should be scaled to now. It is new_rs's
 * current spec.replicas when nothing should happen. Returns 0 or CK_EINVAL.
 */
int ck__deploy_reconcile_new_rs(const json_t *d, const json_t *const *all, size_t n_all,
                                const json_t *new_rs, int32_t *ret_size);
/*
 * reconcileOldReplicaSets: fills ret_sizes[i] with the size old[i] should have (old are
 * the active old ReplicaSets) and returns how many replicas are scaled down in total
 * (0: nothing to do). Unhealthy replicas go first, then old ReplicaSets oldest first,
 * never taking availability under minAvailable.
 */
int32_t ck__deploy_reconcile_old_rss(const json_t *d, const json_t *const *all, size_t n_all,
                                     const json_t *const *old, size_t n_old, const json_t *new_rs,
                                     int32_t *ret_sizes);
/*
 * cleanupUnhealthyReplicas: with sizes[] the current intended sizes of old[], removes up
 * to max_cleanup unavailable replicas, oldest ReplicaSet first; returns how many.
 */
int32_t ck__deploy_cleanup_unhealthy(const json_t *const *old, size_t n_old, int32_t max_cleanup,
                                     int32_t *sizes);
/*
 * scaleDownOldReplicaSetsForRollingUpdate: with sizes[] the current intended sizes of
 * old[], scales them down oldest first as far as availability over old[] and new_rs
 * (may be NULL) stays above minAvailable; returns how many.
 */
int32_t ck__deploy_scale_down_old_for_rolling(const json_t *d, const json_t *const *old,
                                              size_t n_old, const json_t *new_rs, int32_t *sizes);

/* ---- recreate.c --------------------------------------------------------------------- */

/*
 * oldPodsRunning: old ReplicaSets report pods, or pod_map (a JSON object from
 * ReplicaSet uid to an array of its pods) holds a pod not Succeeded or Failed outside
 * new_rs (may be NULL).
 */
bool ck__deploy_old_pods_running(const json_t *new_rs, const json_t *const *old, size_t n_old,
                                 const json_t *pod_map);

/* What rolloutRecreate does next. */
enum ck__deploy_recreate_step {
    CK_DEPLOY_RECREATE_SCALE_DOWN_OLD, /* scale every active old ReplicaSet to 0 */
    CK_DEPLOY_RECREATE_WAIT_OLD_PODS,  /* old pods still run: only sync the status */
    CK_DEPLOY_RECREATE_CREATE_NEW,     /* create the new ReplicaSet (then scale it up) */
    CK_DEPLOY_RECREATE_SCALE_UP_NEW,   /* scale the new ReplicaSet to spec.replicas */
    CK_DEPLOY_RECREATE_DONE,           /* sized: clean up if complete, sync the status */
};
enum ck__deploy_recreate_step ck__deploy_recreate_next(const json_t *d, const json_t *new_rs,
                                                       const json_t *const *old, size_t n_old,
                                                       const json_t *pod_map);

/* ---- sync.c ------------------------------------------------------------------------- */

/*
 * scale: sizes for a Deployment whose spec.replicas changed (or that is paused): the
 * only active ReplicaSet takes it all; a saturated new_rs sends the old ones to 0;
 * otherwise a rolling Deployment spreads the difference proportionally, leftovers to
 * the first ReplicaSet in Kubernetes' order. new_rs may be NULL (ret_new_size is then
 * left alone). *ret_proportional (may be NULL) says which: when true, Kubernetes writes
 * every active ReplicaSet whose size or replica annotations changed
 * (ck__deploy_scaled_rs() != NULL); when false, only those whose size changed.
 * Returns 0, or CK_ENOMEM with every size left at its current value.
 */
int ck__deploy_scale(const json_t *d, const json_t *new_rs, const json_t *const *old, size_t n_old,
                     int32_t *ret_new_size, int32_t *ret_old_sizes, bool *ret_proportional);
/*
 * isScalingEvent: an active ReplicaSet's desired-replicas annotation differs from
 * spec.replicas, so this sync is a scaling event (ck__deploy_scale()), not a rollout.
 */
bool ck__deploy_is_scaling_event(const json_t *d, const json_t *const *rss, size_t n);
/*
 * checkPausedConditions: a Deployment with a progress deadline gets Progressing=Unknown
 * DeploymentPaused when paused, DeploymentResumed when resumed, unless it already timed
 * out. Returns whether d's status changed (and must be written).
 */
bool ck__deploy_check_paused_conditions(json_t *d, int64_t now_ns);
/*
 * scaleReplicaSet's object: a copy of rs with spec.replicas = size and the desired-
 * and max-replicas annotations of d, or NULL when rs already is exactly that.
 */
json_t *ck__deploy_scaled_rs(const json_t *rs, const json_t *d, int32_t size);
/*
 * calculateStatus: counts from all (new_rs included), observedGeneration,
 * collisionCount, d's conditions and the Available condition. New reference.
 */
json_t *ck__deploy_calculate_status(const json_t *const *all, size_t n_all, const json_t *new_rs,
                                    const json_t *d, int64_t now_ns);
/*
 * cleanupDeployment: the old ReplicaSets to delete, lowest revision first, beyond
 * revisionHistoryLimit, skipping any with replicas, unobserved or being deleted.
 * ret_delete holds n_old entries; returns how many were chosen.
 */
size_t ck__deploy_cleanup_choice(const json_t *d, const json_t *const *old, size_t n_old,
                                 const json_t **ret_delete);
/*
 * getNewReplicaSet's creation half: the ReplicaSet to create for d's template, named
 * <deployment>-<hash>, labelled and selected by pod-template-hash, owned by d, sized by
 * NewRSNewReplicas against old, annotated with the next revision. New reference, or NULL
 * with CK_EINVAL in *ret_err for a Deployment it cannot size.
 */
json_t *ck__deploy_new_rs_object(const json_t *d, const json_t *const *old, size_t n_old,
                                 int *ret_err);
/*
 * getNewReplicaSet's existing half: a copy of new_rs with its annotations synced to d
 * and the next revision after old (a rolled-back-to ReplicaSet gets the new revision and
 * keeps its old one in revision-history) and d's minReadySeconds, or NULL when new_rs
 * needs no update.
 */
json_t *ck__deploy_sync_new_rs(const json_t *d, const json_t *new_rs, const json_t *const *old,
                               size_t n_old);
/*
 * getNewReplicaSet's last step for an existing new ReplicaSet: d takes new_rs's
 * revision, and a Progressing condition FoundNewReplicaSet when it has a progress
 * deadline and no Progressing condition yet. Returns whether d changed.
 */
bool ck__deploy_sync_deployment_revision(json_t *d, const json_t *new_rs, int64_t now_ns);

/* ---- progress.c --------------------------------------------------------------------- */

/*
 * syncRolloutStatus: the status to write: calculateStatus plus the Progressing
 * condition (NewReplicaSetAvailable, ReplicaSetUpdated, ProgressDeadlineExceeded) and
 * ReplicaFailure copied from the ReplicaSets. Compare with d's status (json_equal) to
 * know whether to write it. New reference.
 */
json_t *ck__deploy_rollout_status(const json_t *const *all, size_t n_all, const json_t *new_rs,
                                  const json_t *d, int64_t now_ns);
/*
 * requeueStuckDeployment: -1 for no requeue, 0 to requeue now (rate limited), or the
 * nanoseconds after which the deadline check is due.
 */
int64_t ck__deploy_requeue_stuck_after(const json_t *d, const json_t *new_status, int64_t now_ns);

/* ---- rollback.c ---------------------------------------------------------------------- */

/*
 * getRollbackTo: the revision the deprecated rollback annotation asks for, or -1 when
 * there is none (0 means the previous revision).
 */
int64_t ck__deploy_rollback_revision(const json_t *d);
/*
 * The ReplicaSet of a revision (0: the previous one, LastRevision): 0 and *ret_rs
 * (borrowed), or CK_ENOENT (DeploymentRollbackRevisionNotFound).
 */
int ck__deploy_rollback_find(const json_t *const *all, size_t n_all, int64_t revision,
                             const json_t **ret_rs);
/*
 * rollbackToTemplate: when rs's template differs from d's (ignoring the hash), d takes
 * it and rs's annotations (SetDeploymentAnnotationsTo) and true is returned; false means
 * DeploymentRollbackTemplateUnchanged. The controller then finds rs as the new one and
 * ck__deploy_sync_new_rs() gives it the next revision.
 */
bool ck__deploy_rollback_to_template(json_t *d, const json_t *rs);

#endif /* CKUBE_CONTROLLERS_DEPLOYMENT_H */
