/*
 * rolling.c - the arithmetic of a RollingUpdate rollout (kubernetes
 * pkg/controller/deployment/rolling.go).
 *
 * A rolling step first tries to grow the new ReplicaSet within maxSurge
 * (reconcileNewReplicaSet); if it did not, it shrinks old ReplicaSets within
 * maxUnavailable (reconcileOldReplicaSets): first replicas that are not available
 * anyway (cleanupUnhealthyReplicas), then available ones, oldest ReplicaSet first
 * (scaleDownOldReplicaSetsForRollingUpdate). The budget for both shrinking steps is
 *
 *     maxScaledDown = allPods - minAvailable - newRSUnavailable
 *
 * so the new ReplicaSet's own unavailable pods never make old ones go faster.
 *
 * These functions only compute sizes: the caller scales each ReplicaSet whose
 * intended size differs from its spec.replicas (ck__deploy_scaled_rs()).
 *
 * Threading: no state.
 */
#include "ckube/util.h"
#include "deployment.h"

static int32_t min32(int32_t a, int32_t b)
{
    return a < b ? a : b;
}

int ck__deploy_reconcile_new_rs(const json_t *d, const json_t *const *all, size_t n_all,
                                const json_t *new_rs, int32_t *ret_size)
{
    int32_t want = ck__deploy_spec_replicas(d), have = ck__deploy_spec_replicas(new_rs);
    if (have >= want) {
        *ret_size = want; /* saturated, or scale down to the desired count */
        return 0;
    }
    return ck__deploy_new_rs_new_replicas(d, all, n_all, new_rs, ret_size);
}

/* Orders old[i] before old[j]: by creation (then name), then by index. */
static bool before(const json_t *const *old, size_t i, size_t j)
{
    int c = ck__deploy_cmp_by_creation(old[i], old[j]);
    return c < 0 || (c == 0 && i < j);
}

/*
 * The index of the oldest ReplicaSet after old[prev] (prev == n_old: the oldest of all),
 * or n_old when there is none: ReplicaSetsByCreationTimestamp order without a copy.
 */
static size_t next_oldest(const json_t *const *old, size_t n_old, size_t prev)
{
    size_t best = n_old;
    for (size_t i = 0; i < n_old; i++) {
        if (!old[i] || (prev < n_old && !before(old, prev, i)))
            continue;
        if (best == n_old || before(old, i, best))
            best = i;
    }
    return best;
}

int32_t ck__deploy_cleanup_unhealthy(const json_t *const *old, size_t n_old, int32_t max_cleanup,
                                     int32_t *sizes)
{
    int32_t total = 0;
    /*
     * The ReplicaSet controller deletes not-ready, unscheduled and pending pods first,
     * so shrinking by the unavailable count removes exactly the unhealthy ones.
     */
    for (size_t i = next_oldest(old, n_old, n_old); i < n_old && total < max_cleanup;
         i = next_oldest(old, n_old, i)) {
        int32_t available = ck__deploy_status_count(old[i], "availableReplicas");
        if (sizes[i] == 0 || sizes[i] == available)
            continue;
        int32_t down = min32(max_cleanup - total, sizes[i] - available);
        if (down <= 0)
            continue; /* more available than spec.replicas: Kubernetes errors, we skip */
        sizes[i] -= down;
        total += down;
    }
    return total;
}

int32_t ck__deploy_scale_down_old_for_rolling(const json_t *d, const json_t *const *old,
                                              size_t n_old, const json_t *new_rs, int32_t *sizes)
{
    int32_t min_available = ck__deploy_spec_replicas(d) - ck__deploy_max_unavailable(d);
    int32_t available = ck__deploy_available_replica_count(old, n_old);
    if (new_rs)
        available += ck__deploy_status_count(new_rs, "availableReplicas");
    if (available <= min_available)
        return 0;
    int32_t total = 0, budget = available - min_available;
    for (size_t i = next_oldest(old, n_old, n_old); i < n_old && total < budget;
         i = next_oldest(old, n_old, i)) {
        if (sizes[i] == 0)
            continue;
        int32_t down = min32(sizes[i], budget - total);
        sizes[i] -= down;
        total += down;
    }
    return total;
}

int32_t ck__deploy_reconcile_old_rss(const json_t *d, const json_t *const *all, size_t n_all,
                                     const json_t *const *old, size_t n_old, const json_t *new_rs,
                                     int32_t *ret_sizes)
{
    for (size_t i = 0; i < n_old; i++)
        ret_sizes[i] = old[i] ? ck__deploy_spec_replicas(old[i]) : 0;
    if (ck__deploy_replica_count(old, n_old) == 0)
        return 0; /* nothing left to scale down */
    int32_t all_pods = ck__deploy_replica_count(all, n_all);
    int32_t min_available = ck__deploy_spec_replicas(d) - ck__deploy_max_unavailable(d);
    int32_t new_unavailable = 0;
    if (new_rs)
        new_unavailable =
            ck__deploy_spec_replicas(new_rs) - ck__deploy_status_count(new_rs, "availableReplicas");
    int32_t max_scaled_down = all_pods - min_available - new_unavailable;
    if (max_scaled_down <= 0)
        return 0;
    /* unhealthy replicas first: they would block the rollout (kubernetes#16737) */
    int32_t cleaned = ck__deploy_cleanup_unhealthy(old, n_old, max_scaled_down, ret_sizes);
    int32_t scaled = ck__deploy_scale_down_old_for_rolling(d, old, n_old, new_rs, ret_sizes);
    return cleaned + scaled;
}
