/*
 * node.c - what every node agent does for its Node, shared by `ckube agent` and the
 * simulated nodes (fake/fake_nodes.c): the healthy conditions, registration (create the
 * Node, or take it over and write its status) with its Lease in kube-node-lease, and
 * lease renewal, as the kubelet's registerWithAPIServer and nodelease controller do.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ckube/agent.h"
#include "ckube/api.h"
#include "ckube/controllers.h"
#include "ckube/internal/util.h"

static void now_rfc3339(char *buf, size_t size, bool micro)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ck__time_format((int64_t)ts.tv_sec, micro ? ts.tv_nsec / 1000 : -1, buf, size);
}

json_t *ck_agent_node_conditions_with(const struct ck_pressure *p)
{
    char now[40];
    now_rfc3339(now, sizeof(now), false);
    struct ck_pressure none = {0};
    if (!p)
        p = &none;
    /* the kubelet's setters (pkg/kubelet/nodestatus): reason and message per state */
    const char *const c[][4] = {
        {"MemoryPressure", p->memory ? "True" : "False",
         p->memory ? "KubeletHasInsufficientMemory" : "KubeletHasSufficientMemory",
         p->memory ? "kubelet has insufficient memory available"
                   : "kubelet has sufficient memory available"},
        {"DiskPressure", p->disk ? "True" : "False",
         p->disk ? "KubeletHasDiskPressure" : "KubeletHasNoDiskPressure",
         p->disk ? "kubelet has disk pressure" : "kubelet has no disk pressure"},
        {"PIDPressure", p->pid ? "True" : "False",
         p->pid ? "KubeletHasInsufficientPID" : "KubeletHasSufficientPID",
         p->pid ? "kubelet has insufficient PID available"
                : "kubelet has sufficient PID available"},
        {"Ready", "True", "KubeletReady", "kubelet is posting ready status"},
    };
    json_t *list = json_array();
    for (size_t i = 0; list && i < sizeof(c) / sizeof(c[0]); i++)
        json_array_append_new(list,
                              json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", c[i][0], "status",
                                        c[i][1], "reason", c[i][2], "message", c[i][3],
                                        "lastHeartbeatTime", now, "lastTransitionTime", now));
    return list;
}

json_t *ck_agent_node_conditions(void)
{
    return ck_agent_node_conditions_with(NULL);
}

json_t *ck_agent_pressure_taints(const json_t *taints, const struct ck_pressure *p)
{
    static const char *const keys[] = {"node.kubernetes.io/memory-pressure",
                                       "node.kubernetes.io/disk-pressure",
                                       "node.kubernetes.io/pid-pressure"};
    const bool on[] = {p->memory, p->disk, p->pid};
    json_t *out = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(taints, i, t)
    {
        const char *key = json_string_value(json_object_get(t, "key"));
        bool ours = false;
        for (size_t k = 0; k < 3 && key; k++)
            ours = ours || strcmp(key, keys[k]) == 0;
        if (!ours)
            json_array_append(out, t);
    }
    for (size_t k = 0; k < 3; k++)
        if (on[k])
            json_array_append_new(out,
                                  json_pack("{s:s, s:s}", "key", keys[k], "effect", "NoSchedule"));
    return out;
}

int ck_agent_register_node(const struct ck_ctl_client *ctl, const json_t *node, json_t **lease_io,
                           struct ck_err *reterr)
{
    const struct ck_resource *nodes_res = ck_controller_resource("", "v1", "nodes");
    const struct ck_resource *leases_res =
        ck_controller_resource("coordination.k8s.io", "v1", "leases");
    const char *name =
        json_string_value(json_object_get(json_object_get(node, "metadata"), "name"));
    if (!nodes_res || !leases_res || !name)
        return ck_err_set(reterr, CK_EINVAL, "no node name, or no kind serves nodes or leases");
    json_t *stored = NULL;
    int r = ck_ctl_create(ctl, nodes_res, "", node, &stored, reterr);
    if (r == CK_EEXIST) { /* a restart: take it over and report its status again */
        json_t *existing = NULL;
        r = ck_ctl_get(ctl, nodes_res, "", name, &existing, reterr);
        if (r == 0) {
            json_object_set(existing, "status", json_object_get(node, "status"));
            r = ck_ctl_update_status(ctl, nodes_res, "", existing, &stored, reterr);
        }
        json_decref(existing);
    }
    if (r < 0) {
        json_decref(stored);
        return r;
    }
    /* the lease, owned by the node */
    const char *uid =
        json_string_value(json_object_get(json_object_get(stored, "metadata"), "uid"));
    char now[40];
    now_rfc3339(now, sizeof(now), true);
    json_t *lease =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:[{s:s, s:s, s:s, s:s}]}, s:{s:s, s:i, s:s}}",
                  "apiVersion", "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name", name,
                  "namespace", "kube-node-lease", "ownerReferences", "apiVersion", "v1", "kind",
                  "Node", "name", name, "uid", uid ? uid : "", "spec", "holderIdentity", name,
                  "leaseDurationSeconds", CK_FAKE_NODE_LEASE_SECONDS, "renewTime", now);
    json_decref(stored);
    if (!lease)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    json_t *written = NULL;
    r = ck_ctl_create(ctl, leases_res, "kube-node-lease", lease, &written, reterr);
    if (r == CK_EEXIST)
        r = ck_ctl_get(ctl, leases_res, "kube-node-lease", name, &written, reterr);
    json_decref(lease);
    if (r == 0) {
        json_decref(*lease_io);
        *lease_io = written;
    }
    return r;
}

int ck_agent_renew_lease(const struct ck_ctl_client *ctl, json_t **lease_io, struct ck_err *reterr)
{
    const struct ck_resource *leases_res =
        ck_controller_resource("coordination.k8s.io", "v1", "leases");
    json_t *lease = *lease_io ? ck__json_copy(*lease_io) : NULL;
    if (!lease || !leases_res) {
        json_decref(lease);
        return ck_err_set(reterr, CK_ENOENT, "no lease yet");
    }
    char now[40];
    now_rfc3339(now, sizeof(now), true);
    json_object_set_new(json_object_get(lease, "spec"), "renewTime", json_string(now));
    json_t *written = NULL;
    int r = ck_ctl_update(ctl, leases_res, "kube-node-lease", lease, &written, reterr);
    if (r == 0) {
        json_decref(*lease_io);
        *lease_io = written;
    }
    json_decref(lease);
    return r;
}

bool ck_agent_node_ready(const json_t *node)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(node, "status"), "conditions"), i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        const char *status = json_string_value(json_object_get(c, "status"));
        if (type && status && strcmp(type, "Ready") == 0)
            return strcmp(status, "True") == 0;
    }
    return false;
}
