/*
 * podresources.c - a pod's QoS class and the resources of its pod cgroup, as the kubelet
 * computes them: pkg/apis/core/v1/helper/qos (GetPodQOS), k8s.io/component-helpers
 * resource (PodRequests, PodLimits) and pkg/kubelet/cm/helpers_linux.go
 * (ResourceConfigForPod, MilliCPUToShares, MilliCPUToQuota). A pure function of the pod's
 * JSON, so that it is tested without cgroups; runtime_cri.c writes the pod cgroup from
 * it and emptydir.c sizes memory-backed emptyDirs with it.
 *
 * - The pod's requests: the containers' summed, then the larger of that and each init
 *   container's (a restartable "sidecar" init container counts with the containers, and
 *   with every init container after it); the pod's overhead added. Limits the same way,
 *   the overhead added only to a resource already limited. A container's request that is
 *   absent is its limit (the API's defaulting, which ckube's API server does not store).
 * - Guaranteed: cpu shares from the requests, the cpu quota from the limits (per
 *   100 ms), the memory limit. Burstable: the shares; the quota only when every
 *   container (and init container) limits cpu, the memory limit only when every one
 *   limits memory. BestEffort: 2 shares and nothing else.
 *
 * Threading: none.
 */
#include <string.h>

#include "ckube/api.h"
#include "internal.h"

#define MIN_SHARES   2
#define MAX_SHARES   262144
#define MIN_QUOTA    1000   /* us: 1 ms */
#define QUOTA_PERIOD 100000 /* us: 100 ms */

/* A quantity: milli-units for cpu, bytes (rounded up) for memory; 0 absent or malformed. */
static int64_t amount(const json_t *list, const char *name)
{
    int64_t m = 0;
    const char *s = json_string_value(json_object_get(list, name));
    if (!s || ck_quantity_milli(s, &m) < 0 || m < 0)
        return 0;
    return strcmp(name, "cpu") == 0 ? m : (m + 999) / 1000;
}

/* cpu (milli) and memory (bytes) of a container's requests or limits. */
struct amounts {
    int64_t cpu, memory;
};

static struct amounts of(const json_t *c, const char *which)
{
    const json_t *res = json_object_get(c, "resources");
    const json_t *list = json_object_get(res, which);
    const json_t *limits = json_object_get(res, "limits");
    struct amounts a = {amount(list, "cpu"), amount(list, "memory")};
    if (strcmp(which, "requests") == 0) { /* defaulted to the limit when absent */
        if (!json_object_get(list, "cpu"))
            a.cpu = amount(limits, "cpu");
        if (!json_object_get(list, "memory"))
            a.memory = amount(limits, "memory");
    }
    return a;
}

static bool is_sidecar(const json_t *c)
{
    const char *p = json_string_value(json_object_get(c, "restartPolicy"));
    return p && strcmp(p, "Always") == 0;
}

static void add(struct amounts *to, struct amounts a)
{
    to->cpu += a.cpu;
    to->memory += a.memory;
}

static void max_of(struct amounts *to, struct amounts a)
{
    if (a.cpu > to->cpu)
        to->cpu = a.cpu;
    if (a.memory > to->memory)
        to->memory = a.memory;
}

/*
 * PodRequests or PodLimits ("requests", "limits"); *cpu_all and *memory_all (may be
 * NULL) say whether every container's (cumulative, for init containers) amount was
 * non-zero: limits declared.
 */
static struct amounts pod_amounts(const json_t *pod, const char *which, bool *cpu_all,
                                  bool *memory_all)
{
    const json_t *spec = json_object_get(pod, "spec");
    struct amounts total = {0, 0}, sidecars = {0, 0}, inits = {0, 0};
    bool cpu = true, memory = true;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(spec, "containers"), i, c)
    {
        struct amounts a = of(c, which);
        cpu = cpu && a.cpu > 0;
        memory = memory && a.memory > 0;
        add(&total, a);
    }
    json_array_foreach(json_object_get(spec, "initContainers"), i, c)
    {
        struct amounts a = of(c, which);
        if (is_sidecar(c)) {
            add(&total, a);
            add(&sidecars, a);
            a = sidecars;
        } else {
            add(&a, sidecars);
        }
        cpu = cpu && a.cpu > 0;
        memory = memory && a.memory > 0;
        max_of(&inits, a);
    }
    max_of(&total, inits);
    const json_t *overhead = json_object_get(spec, "overhead");
    if (strcmp(which, "requests") == 0) {
        total.cpu += amount(overhead, "cpu");
        total.memory += amount(overhead, "memory");
    } else { /* only what is limited already */
        if (json_object_get(overhead, "cpu") && total.cpu > 0)
            total.cpu += amount(overhead, "cpu");
        if (json_object_get(overhead, "memory") && total.memory > 0)
            total.memory += amount(overhead, "memory");
    }
    if (cpu_all)
        *cpu_all = cpu;
    if (memory_all)
        *memory_all = memory;
    return total;
}

const char *ck__pod_qos(const json_t *pod)
{
    const char *status =
        json_string_value(json_object_get(json_object_get(pod, "status"), "qosClass"));
    if (status && *status) /* GetPodQOS: the status's when set */
        return status;
    /* ComputePodQOS over the defaulted requests: sums of positive amounts compared */
    const json_t *spec = json_object_get(pod, "spec");
    static const char *const lists[] = {"containers", "initContainers"};
    struct amounts req = {0, 0}, lim = {0, 0};
    bool guaranteed = true, req_cpu = false, req_mem = false, lim_cpu = false, lim_mem = false;
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(spec, lists[l]), i, c)
        {
            struct amounts r = of(c, "requests"), li = of(c, "limits");
            add(&req, r);
            add(&lim, li);
            req_cpu = req_cpu || r.cpu > 0;
            req_mem = req_mem || r.memory > 0;
            lim_cpu = lim_cpu || li.cpu > 0;
            lim_mem = lim_mem || li.memory > 0;
            if (li.cpu <= 0 || li.memory <= 0)
                guaranteed = false;
        }
    }
    if (!req_cpu && !req_mem && !lim_cpu && !lim_mem)
        return "BestEffort";
    if (guaranteed && req.cpu == lim.cpu && req.memory == lim.memory && req_cpu == lim_cpu &&
        req_mem == lim_mem)
        return "Guaranteed";
    return "Burstable";
}

void ck__pod_resource_config(const json_t *pod, struct ck__pod_resources *ret)
{
    memset(ret, 0, sizeof(*ret));
    bool cpu_declared = false, memory_declared = false;
    struct amounts req = pod_amounts(pod, "requests", NULL, NULL);
    struct amounts lim = pod_amounts(pod, "limits", &cpu_declared, &memory_declared);
    int64_t shares = req.cpu == 0 ? MIN_SHARES : req.cpu * 1024 / 1000;
    if (shares < MIN_SHARES)
        shares = MIN_SHARES;
    if (shares > MAX_SHARES)
        shares = MAX_SHARES;
    int64_t quota = 0;
    if (lim.cpu > 0) {
        quota = lim.cpu * QUOTA_PERIOD / 1000;
        if (quota < MIN_QUOTA)
            quota = MIN_QUOTA;
    }
    const char *qos = ck__pod_qos(pod);
    ret->cpu_shares = MIN_SHARES;
    if (strcmp(qos, "BestEffort") == 0)
        return;
    ret->cpu_shares = (uint64_t)shares;
    bool guaranteed = strcmp(qos, "Guaranteed") == 0;
    if (guaranteed || cpu_declared) {
        ret->has_cpu_quota = true;
        ret->cpu_quota = quota;
        ret->cpu_period = QUOTA_PERIOD;
    }
    if (guaranteed || memory_declared) {
        ret->has_memory = true;
        ret->memory = lim.memory;
    }
}
