/*
 * node.c - the Node kind (core/v1): cluster-scoped, with a status
 * subresource the node agent writes, and a printer that computes STATUS
 * (Ready condition, SchedulingDisabled), ROLES (node-role.kubernetes.io/
 * labels) and the addresses as Kubernetes' printNode does.
 *
 * spec.podCIDR and spec.podCIDRs say the same (v1 conversion: either fills the other,
 * podCIDR being podCIDRs[0]); each is a CIDR, at most two of them; once set they never
 * change (ValidateNodeUpdate: "node updates may not change podCIDR except from \"\" to
 * valid"), so the node IPAM controller may set them once on a Node without one.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_printers.c (the computed columns), test_kinds.c and
 * test_node.c (podCIDR).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"

enum {
    COL_NAME,
    COL_STATUS,
    COL_ROLES,
    COL_AGE,
    COL_VERSION,
    COL_INTERNAL_IP,
    COL_EXTERNAL_IP,
    COL_OS_IMAGE,
    COL_KERNEL,
    COL_RUNTIME,
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static json_t *node_roles(const json_t *labels)
{
    static const char prefix[] = "node-role.kubernetes.io/";
    const char *roles[32];
    size_t n = 0;
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)labels, key, value)
    {
        if (n == 32)
            break;
        if (strncmp(key, prefix, sizeof(prefix) - 1) == 0 && key[sizeof(prefix) - 1])
            roles[n++] = key + sizeof(prefix) - 1;
        else if (strcmp(key, "kubernetes.io/role") == 0 && json_string_length(value))
            roles[n++] = json_string_value(value);
    }
    if (n == 0)
        return json_string("<none>");
    qsort(roles, n, sizeof(roles[0]), cmp_str);
    char buf[512] = "";
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && strcmp(roles[i], roles[i - 1]) == 0)
            continue;
        if (buf[0])
            strncat(buf, ",", sizeof(buf) - strlen(buf) - 1);
        strncat(buf, roles[i], sizeof(buf) - strlen(buf) - 1);
    }
    return json_string(buf);
}

static const char *node_address(const json_t *obj, const char *type)
{
    size_t i;
    json_t *a;
    json_array_foreach(ck__json_path(obj, "status.addresses"), i, a)
    {
        const char *t = ck__str_at(a, "type");
        if (t && strcmp(t, type) == 0)
            return ck__str_at(a, "address");
    }
    return NULL;
}

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    const char *status = "Unknown";
    size_t i;
    json_t *c;
    json_array_foreach(ck__json_path(obj, "status.conditions"), i, c)
    {
        const char *type = ck__str_at(c, "type");
        if (type && strcmp(type, "Ready") == 0) {
            const char *s = ck__str_at(c, "status");
            status = s && strcmp(s, "True") == 0 ? "Ready" : "NotReady";
        }
    }
    char buf[128];
    snprintf(buf, sizeof(buf), "%s%s", status,
             json_is_true(ck__json_path(obj, "spec.unschedulable")) ? ",SchedulingDisabled" : "");
    cells[COL_STATUS] = json_string(buf);
    cells[COL_ROLES] = node_roles(ck__json_path(obj, "metadata.labels"));
    cells[COL_INTERNAL_IP] = json_string(ck__or_none(node_address(obj, "InternalIP")));
    cells[COL_EXTERNAL_IP] = json_string(ck__or_none(node_address(obj, "ExternalIP")));
}

/* podCIDR and podCIDRs fill each other, as the v1 conversion of a Node does. */
static int defaults(json_t *obj)
{
    json_t *spec = json_object_get(obj, "spec");
    const json_t *one = json_object_get(spec, "podCIDR");
    const json_t *list = json_object_get(spec, "podCIDRs");
    const char *text = json_string_value(one);
    if (text && *text && json_array_size(list) == 0)
        return json_object_set_new(spec, "podCIDRs", json_pack("[s]", text)) < 0 ? CK_ENOMEM : 0;
    if ((!text || !*text) && json_array_size(list) > 0 && json_is_string(json_array_get(list, 0)))
        return json_object_set(spec, "podCIDR", json_array_get(list, 0)) < 0 ? CK_ENOMEM : 0;
    return 0;
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *list = json_object_get(spec, "podCIDRs");
    const char *one = json_string_value(json_object_get(spec, "podCIDR"));
    size_t i;
    const json_t *v;
    if (one && *one && !ck__format_valid("cidr", one))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.podCIDR", one, true,
                            "must be a valid CIDR");
    json_array_foreach(list, i, v)
    {
        char field[40];
        snprintf(field, sizeof(field), "spec.podCIDRs[%zu]", i);
        const char *text = json_string_value(v);
        if (!text || !ck__format_valid("cidr", text))
            ck_field_errors_add(errs, CK_FIELD_INVALID, field, text ? text : "", true,
                                "must be a valid CIDR");
    }
    if (json_array_size(list) > 2)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.podCIDRs", NULL, false,
                            "may specify no more than one CIDR for each IP family");
    else if (one && *one && json_array_size(list) > 0 &&
             !json_equal(json_object_get(spec, "podCIDR"), json_array_get(list, 0)))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.podCIDRs", NULL, false,
                            "the first entry must match spec.podCIDR");
    const json_t *old_list = json_object_get(json_object_get(old, "spec"), "podCIDRs");
    if (old && json_array_size(old_list) > 0 && !json_equal(old_list, list))
        ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "spec.podCIDRs", NULL, false,
                            "node updates may not change podCIDR except from \"\" to valid");
}

static const char *const short_names[] = {"no", NULL};

static const struct ck_subresource subresources[] = {
    CK__PROXY_SUBRESOURCE("NodeProxyOptions"),
    CK__STATUS_SUBRESOURCE,
};

static const struct ck_field_label field_labels[] = {
    {"spec.unschedulable", "spec.unschedulable", CK_FIELD_LABEL_BOOL},
};

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_STATUS] = CK__COMPUTED_COLUMN("Status", "string", "The status of the node", 0),
    [COL_ROLES] = CK__COMPUTED_COLUMN("Roles", "string", "The roles of the node", 0),
    [COL_AGE] = CK__AGE_COLUMN,
    [COL_VERSION] = {"Version", "string", "", "Kubelet Version reported by the node.", 0,
                     ".status.nodeInfo.kubeletVersion", CK_CELL_ABSENT_EMPTY, false},
    [COL_INTERNAL_IP] =
        CK__COMPUTED_COLUMN("Internal-IP", "string", "List of addresses reachable to the node.", 1),
    [COL_EXTERNAL_IP] =
        CK__COMPUTED_COLUMN("External-IP", "string", "List of addresses reachable to the node.", 1),
    [COL_OS_IMAGE] =
        {"OS-Image", "string", "",
         "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
         1, ".status.nodeInfo.osImage", CK_CELL_ABSENT_NONE, false},
    [COL_KERNEL] =
        {"Kernel-Version", "string", "",
         "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).", 1,
         ".status.nodeInfo.kernelVersion", CK_CELL_ABSENT_NONE, false},
    [COL_RUNTIME] =
        {"Container-Runtime", "string", "",
         "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
         1, ".status.nodeInfo.containerRuntimeVersion", CK_CELL_ABSENT_NONE, false},
};

const struct ck_kind ck__kind_node = {
    .group = "",
    .version = "v1",
    .kind = "Node",
    .list_kind = "NodeList",
    .resource = "nodes",
    .singular = "node",
    .short_names = short_names,
    .namespaced = false,
    .role = CK_KIND_ROLE_NODE,
    .schema = "io.k8s.api.core.v1.Node",
    CK__KIND_SUBRESOURCES(subresources),
    CK__KIND_FIELD_LABELS(field_labels),
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .defaults = defaults,
    .validate = validate,
};
