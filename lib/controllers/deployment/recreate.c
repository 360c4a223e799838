/*
 * recreate.c - the order of a Recreate rollout (kubernetes
 * pkg/controller/deployment/recreate.go).
 *
 * Recreate never runs old and new pods side by side: every active old ReplicaSet goes
 * to 0 first; then the rollout waits until no old pod is left running (a pod counts
 * until it is Succeeded or Failed, and a pod in phase Unknown counts too, since it may
 * still run); only then is the new ReplicaSet created (if it is not there yet) and
 * scaled to spec.replicas. ck__deploy_recreate_next() says which of these steps is due.
 *
 * Threading: no state.
 */
#include <string.h>

#include "deployment.h"

bool ck__deploy_old_pods_running(const json_t *new_rs, const json_t *const *old, size_t n_old,
                                 const json_t *pod_map)
{
    if (ck__deploy_actual_replica_count(old, n_old) > 0)
        return true;
    const char *new_uid = new_rs ? ck__deploy_uid(new_rs) : NULL;
    const char *uid;
    const json_t *pods;
    json_object_foreach((json_t *)pod_map, uid, pods)
    {
        if (new_uid && strcmp(uid, new_uid) == 0)
            continue; /* the new ReplicaSet's pods are not old */
        size_t i;
        const json_t *pod;
        json_array_foreach(pods, i, pod)
        {
            const char *phase =
                json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
            if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0))
                continue; /* terminal: not running */
            return true;  /* Pending, Running, Unknown or not reported yet */
        }
    }
    return false;
}

enum ck__deploy_recreate_step ck__deploy_recreate_next(const json_t *d, const json_t *new_rs,
                                                       const json_t *const *old, size_t n_old,
                                                       const json_t *pod_map)
{
    for (size_t i = 0; i < n_old; i++)
        if (old[i] && ck__deploy_spec_replicas(old[i]) > 0)
            return CK_DEPLOY_RECREATE_SCALE_DOWN_OLD;
    if (ck__deploy_old_pods_running(new_rs, old, n_old, pod_map))
        return CK_DEPLOY_RECREATE_WAIT_OLD_PODS;
    if (!new_rs)
        return CK_DEPLOY_RECREATE_CREATE_NEW;
    if (ck__deploy_spec_replicas(new_rs) != ck__deploy_spec_replicas(d))
        return CK_DEPLOY_RECREATE_SCALE_UP_NEW;
    return CK_DEPLOY_RECREATE_DONE;
}
