/*
 * progress.c - the Progressing and ReplicaFailure conditions of a Deployment (kubernetes
 * pkg/controller/deployment/progress.go: syncRolloutStatus, getReplicaFailures,
 * requeueStuckDeployment).
 *
 * With spec.progressDeadlineSeconds set (and not "infinite", INT32_MAX), each sync
 * judges the rollout against the status it is about to write:
 *   - complete (every replica updated and available): Progressing=True,
 *     NewReplicaSetAvailable;
 *   - progress since the last status (more updated, ready or available pods, fewer
 *     old ones): Progressing=True, ReplicaSetUpdated, with a fresh lastUpdateTime (and
 *     the old lastTransitionTime when it was True already);
 *   - no progress for progressDeadlineSeconds since the condition's lastUpdateTime:
 *     Progressing=False, ProgressDeadlineExceeded.
 * A Deployment whose Progressing condition already says NewReplicaSetAvailable and
 * whose replicas are all updated is not judged again. Without a deadline the
 * Progressing condition is removed. A ReplicaFailure condition of the new ReplicaSet
 * (else of any ReplicaSet) is copied to the Deployment, or removed when none has one.
 *
 * The time is the caller's `now_ns`; requeueStuckDeployment's answer is a delay for the
 * caller's queue rather than a call on it.
 *
 * Threading: no state.
 */
#include <stdio.h>
#include <string.h>

#include "deployment.h"

static bool str_is(const json_t *v, const char *s)
{
    const char *t = json_string_value(v);
    return t && strcmp(t, s) == 0;
}

/* "ReplicaSet "x" <what>" for the new ReplicaSet, else "Deployment "d" <what>". */
static void message(char *buf, size_t size, const json_t *new_rs, const json_t *d, const char *what)
{
    const char *name = new_rs ? ck__deploy_name(new_rs) : ck__deploy_name(d);
    snprintf(buf, size, "%s \"%s\" %s", new_rs ? "ReplicaSet" : "Deployment", name ? name : "",
             what);
}

/* getReplicaFailures: the first ReplicaFailure condition, the new ReplicaSet's first. */
static const json_t *replica_failure(const json_t *const *all, size_t n_all, const json_t *new_rs)
{
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(json_object_get(new_rs, "status"), "conditions"), i, c)
    {
        if (str_is(json_object_get(c, "type"), CK_DEPLOY_COND_REPLICA_FAILURE))
            return c;
    }
    for (size_t k = 0; k < n_all; k++) {
        json_array_foreach(json_object_get(json_object_get(all[k], "status"), "conditions"), i, c)
        {
            if (str_is(json_object_get(c, "type"), CK_DEPLOY_COND_REPLICA_FAILURE))
                return c;
        }
    }
    return NULL;
}

json_t *ck__deploy_rollout_status(const json_t *const *all, size_t n_all, const json_t *new_rs,
                                  const json_t *d, int64_t now_ns)
{
    json_t *st = ck__deploy_calculate_status(all, n_all, new_rs, d, now_ns);
    bool has_deadline = ck__deploy_has_progress_deadline(d);
    char msg[320];
    if (!has_deadline)
        ck__deploy_condition_remove(st, CK_DEPLOY_COND_PROGRESSING);

    /* one active ReplicaSet and a finished rollout: a resync, nothing to estimate */
    const json_t *cur =
        ck__deploy_condition_get(json_object_get(d, "status"), CK_DEPLOY_COND_PROGRESSING);
    bool finished = json_integer_value(json_object_get(st, "replicas")) ==
                        json_integer_value(json_object_get(st, "updatedReplicas")) &&
                    cur &&
                    str_is(json_object_get(cur, "reason"), CK_DEPLOY_REASON_NEW_RS_AVAILABLE);

    if (has_deadline && !finished) {
        if (ck__deploy_complete(d, st)) {
            message(msg, sizeof(msg), new_rs, d, "has successfully progressed.");
            ck__deploy_condition_set(
                st, ck__deploy_condition_new(CK_DEPLOY_COND_PROGRESSING, "True",
                                             CK_DEPLOY_REASON_NEW_RS_AVAILABLE, msg, now_ns));
        } else if (ck__deploy_progressing(d, st)) {
            message(msg, sizeof(msg), new_rs, d, "is progressing.");
            json_t *c = ck__deploy_condition_new(CK_DEPLOY_COND_PROGRESSING, "True",
                                                 CK_DEPLOY_REASON_RS_UPDATED, msg, now_ns);
            /*
             * Progress refreshes lastUpdateTime even with the same reason, which
             * SetDeploymentCondition alone would not: replace it by hand.
             */
            if (cur) {
                json_t *t = json_object_get(cur, "lastTransitionTime");
                if (str_is(json_object_get(cur, "status"), "True") && t)
                    json_object_set(c, "lastTransitionTime", t);
                ck__deploy_condition_remove(st, CK_DEPLOY_COND_PROGRESSING);
            }
            ck__deploy_condition_set(st, c);
        } else if (ck__deploy_timed_out(d, st, now_ns)) {
            message(msg, sizeof(msg), new_rs, d, "has timed out progressing.");
            ck__deploy_condition_set(
                st, ck__deploy_condition_new(CK_DEPLOY_COND_PROGRESSING, "False",
                                             CK_DEPLOY_REASON_TIMED_OUT, msg, now_ns));
        }
    }

    const json_t *failure = replica_failure(all, n_all, new_rs);
    if (failure)
        ck__deploy_condition_set(st, ck__deploy_condition_from_rs(failure));
    else
        ck__deploy_condition_remove(st, CK_DEPLOY_COND_REPLICA_FAILURE);
    return st;
}

int64_t ck__deploy_requeue_stuck_after(const json_t *d, const json_t *new_status, int64_t now_ns)
{
    const json_t *cur =
        ck__deploy_condition_get(json_object_get(d, "status"), CK_DEPLOY_COND_PROGRESSING);
    if (!ck__deploy_has_progress_deadline(d) || !cur)
        return -1; /* nothing to measure progress against */
    if (ck__deploy_complete(d, new_status) ||
        str_is(json_object_get(cur, "reason"), CK_DEPLOY_REASON_TIMED_OUT))
        return -1; /* done, or already judged */
    int64_t from = 0;
    ck__deploy_parse_time(json_string_value(json_object_get(cur, "lastUpdateTime")), &from);
    int64_t pds =
        json_integer_value(json_object_get(json_object_get(d, "spec"), "progressDeadlineSeconds"));
    /* lastUpdateTime + progressDeadlineSeconds - now */
    int64_t after = from + pds * CK_DEPLOY_NS_PER_SEC - now_ns;
    return after < CK_DEPLOY_NS_PER_SEC ? 0 : after;
}
