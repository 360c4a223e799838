/*
 * gc.c - which dead containers the agent's garbage collection removes: the policy of
 * kubelet's container GC (pkg/kubelet/kuberuntime/kuberuntime_gc.go, evictContainers;
 * the policy of pkg/kubelet/container/container_gc.go) as a pure function over a list,
 * so that it is tested without a runtime. runtime_cri.c lists the runtime's containers
 * into it and removes what it marks.
 *
 * A container is evictable when it is not running and was created more than MinAge
 * ago. Evictable containers are grouped by (pod uid, container name), kubelet's evict
 * unit, newest first (kubelet's byAttempt: the higher attempt, then the later
 * creation; across units too). Then, as the kubelet:
 * - MaxPerPodContainer >= 0: each unit keeps its newest MaxPerPodContainer;
 * - MaxContainers >= 0 and more evictable containers left than that: each unit keeps
 *   its newest max(1, MaxContainers / units); if still too many, the oldest of all go
 *   until MaxContainers are left.
 * The agent's own rule on top (struct ck__gc_container.kept): a container it still
 * serves (its pod's current attempt, and the one before, whose log `kubectl logs
 * --previous` reads) counts in its unit as any other but is never marked; a removal it
 * would have been is skipped, not passed on to a younger one (as the kubelet skips a
 * container it cannot remove).
 *
 * Images (ck__image_gc_select), as kubelet's image GC manager frees space
 * (pkg/kubelet/images/image_gc_manager.go, freeSpace): the images no container uses,
 * least recently used first (then first detected first), skipping pinned ones and
 * ones first detected less than MinAge ago, until the bytes to free are reached.
 *
 * Threading: none; the caller owns the lists.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Newest first as kubelet's byAttempt orders them: the higher attempt, then the later creation. */
static int newest_cmp(const void *a, const void *b)
{
    const struct ck__gc_container *x = *(const struct ck__gc_container *const *)a;
    const struct ck__gc_container *y = *(const struct ck__gc_container *const *)b;
    if (x->attempt != y->attempt)
        return x->attempt > y->attempt ? -1 : 1;
    return x->created_at > y->created_at ? -1 : x->created_at < y->created_at;
}

/* Unit (uid, name) order, then newest first: each unit is one run, its newest first. */
static int unit_cmp(const void *a, const void *b)
{
    const struct ck__gc_container *x = *(const struct ck__gc_container *const *)a;
    const struct ck__gc_container *y = *(const struct ck__gc_container *const *)b;
    int c = strcmp(x->pod_uid, y->pod_uid);
    if (c == 0)
        c = strcmp(x->name, y->name);
    return c ? c : newest_cmp(a, b);
}

/* Marks the oldest `remove` of v[0..n) (newest first), kept ones skipped. */
static void mark_oldest(struct ck__gc_container **v, size_t n, size_t remove)
{
    for (size_t i = n; i > n - remove; i--)
        if (!v[i - 1]->kept)
            v[i - 1]->evict = true;
}

/*
 * Each unit of the candidates v[0..n) (grouped, newest first) keeps its newest `keep`;
 * the others leave the candidates. Returns the candidates left, compacted in v.
 */
static size_t keep_per_unit(struct ck__gc_container **v, size_t n, size_t keep)
{
    size_t out = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && strcmp(v[j]->pod_uid, v[i]->pod_uid) == 0 &&
               strcmp(v[j]->name, v[i]->name) == 0)
            j++;
        size_t len = j - i;
        if (len > keep)
            mark_oldest(v + i, len, len - keep);
        for (size_t k = i; k < j && k < i + keep; k++)
            v[out++] = v[k];
        i = j;
    }
    return out;
}

static size_t count_units(struct ck__gc_container *const *v, size_t n)
{
    size_t units = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || strcmp(v[i]->pod_uid, v[i - 1]->pod_uid) != 0 ||
            strcmp(v[i]->name, v[i - 1]->name) != 0)
            units++;
    return units;
}

int ck__gc_select(struct ck__gc_container *c, size_t n, const struct ck__rt_gc_policy *policy,
                  int64_t now, size_t *ret_n)
{
    size_t marked = 0;
    for (size_t i = 0; i < n; i++)
        c[i].evict = false;
    struct ck__gc_container **v = calloc(n + 1, sizeof(*v));
    if (!v)
        return CK_ENOMEM;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!c[i].running && c[i].created_at <= now - policy->min_age)
            v[m++] = &c[i];
    if (m > 1)
        qsort(v, m, sizeof(*v), unit_cmp);
    if (policy->max_per_pod_container >= 0)
        m = keep_per_unit(v, m, (size_t)policy->max_per_pod_container);
    if (policy->max_containers >= 0 && m > (size_t)policy->max_containers) {
        size_t per_unit = (size_t)policy->max_containers / count_units(v, m);
        m = keep_per_unit(v, m, per_unit < 1 ? 1 : per_unit);
        if (m > (size_t)policy->max_containers) {
            qsort(v, m, sizeof(*v), newest_cmp);
            mark_oldest(v, m, m - (size_t)policy->max_containers);
        }
    }
    free(v);
    for (size_t i = 0; i < n; i++)
        marked += c[i].evict;
    *ret_n = marked;
    return 0;
}

/* Least recently used first, then first detected first (kubelet's byLastUsedAndDetected). */
static int lru_cmp(const void *a, const void *b)
{
    const struct ck__gc_image *x = *(const struct ck__gc_image *const *)a;
    const struct ck__gc_image *y = *(const struct ck__gc_image *const *)b;
    if (x->last_used != y->last_used)
        return x->last_used < y->last_used ? -1 : 1;
    return x->first_detected < y->first_detected ? -1 : x->first_detected > y->first_detected;
}

int ck__image_gc_select(struct ck__gc_image *img, size_t n, uint64_t bytes_to_free, int64_t min_age,
                        int64_t now, uint64_t *ret_freed)
{
    struct ck__gc_image **v = calloc(n + 1, sizeof(*v));
    size_t m = 0;
    uint64_t freed = 0;
    if (!v)
        return CK_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        img[i].remove = false;
        if (!img[i].in_use)
            v[m++] = &img[i];
    }
    if (m > 1)
        qsort(v, m, sizeof(*v), lru_cmp);
    for (size_t i = 0; i < m && freed < bytes_to_free; i++) {
        if (v[i]->pinned || now - v[i]->first_detected < min_age)
            continue;
        v[i]->remove = true;
        freed += v[i]->size;
    }
    free(v);
    *ret_freed = freed;
    return 0;
}
