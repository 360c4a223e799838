/*
 * service.c - the Service kind (core/v1): a stable virtual IP and ports in
 * front of the pods a selector picks.
 *
 * Mirrors Kubernetes' pkg/registry/core/service (strategy and the
 * patchAllocatedValues step of its REST storage), SetDefaults_Service and
 * ValidateService/ValidateServiceUpdate: type ClusterIP and session affinity
 * None by default; targetPort defaults to port; NodePort and LoadBalancer
 * services get externalTrafficPolicy Cluster, every service but an
 * ExternalName one internalTrafficPolicy Cluster and one IPv4 family; an
 * update that leaves out the cluster IP or a node port keeps the allocated
 * one. Ports are named DNS-1123 labels (required when there are several),
 * unique, 1-65535; a ClusterIP service takes no node port; an ExternalName
 * service names a DNS subdomain and has no cluster IP; the cluster IP never
 * changes once set. The IPs and node ports themselves are allocated by the
 * server (lib/apiserver/allocator.c), which finds this kind by its role.
 * kubectl prints NAME, TYPE, CLUSTER-IP, EXTERNAL-IP, PORT(S), AGE and, wide,
 * SELECTOR; spec.clusterIP and spec.type are field labels.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 * Tested by tests/api/test_service.c and test_kinds.c, tests/apiserver/
 * test_allocator.c and the kubectl e2e test of the kinds.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "ckube/internal/util.h"

enum { COL_NAME, COL_TYPE, COL_CLUSTER_IP, COL_EXTERNAL_IP, COL_PORTS, COL_AGE, COL_SELECTOR };

static const char *service_type(const json_t *service)
{
    const char *type = ck__str_at(service, "spec.type");
    return type && *type ? type : "ClusterIP";
}

static bool needs_node_ports(const json_t *service)
{
    const char *type = service_type(service);
    if (strcmp(type, "NodePort") == 0)
        return true;
    if (strcmp(type, "LoadBalancer") != 0)
        return false;
    const json_t *allocate = ck__json_path(service, "spec.allocateLoadBalancerNodePorts");
    return !json_is_false(allocate);
}

static int set_string(json_t *obj, const char *key, const char *value)
{
    return json_object_set_new(obj, key, json_string(value)) < 0 ? CK_ENOMEM : 0;
}

/* The server owns status: a create starts from an empty load balancer. */
static int prepare_for_create(json_t *obj)
{
    json_t *status = json_pack("{s:{}}", "loadBalancer");
    return status && json_object_set_new(obj, "status", status) == 0 ? 0 : CK_ENOMEM;
}

/* The old port matching port and protocol, as patchAllocatedValues pairs them. */
static const json_t *old_port(const json_t *old, const json_t *port)
{
    size_t i;
    const json_t *candidate;
    const char *protocol = json_string_value(json_object_get(port, "protocol"));
    json_array_foreach(ck__json_path(old, "spec.ports"), i, candidate)
    {
        const char *old_protocol = json_string_value(json_object_get(candidate, "protocol"));
        if (json_integer_value(json_object_get(candidate, "port")) ==
                json_integer_value(json_object_get(port, "port")) &&
            strcmp(protocol ? protocol : "TCP", old_protocol ? old_protocol : "TCP") == 0)
            return candidate;
    }
    return NULL;
}

/* The field is dropped when the new state still has the value old had. */
static void drop_if_unchanged(json_t *spec, const json_t *old_spec, const char *field)
{
    const json_t *now = json_object_get(spec, field);
    if (now && json_equal(now, json_object_get(old_spec, field)))
        json_object_del(spec, field);
}

/*
 * dropTypeDependentFields: a change of type drops what only the old type
 * used, unless the request set it anew (changed it).
 */
static void drop_type_dependent_fields(json_t *spec, const json_t *obj, const json_t *old)
{
    const json_t *old_spec = json_object_get(old, "spec");
    if (strcmp(service_type(obj), service_type(old)) == 0)
        return;
    if (strcmp(service_type(obj), "ExternalName") == 0) {
        drop_if_unchanged(spec, old_spec, "clusterIP");
        drop_if_unchanged(spec, old_spec, "clusterIPs");
        drop_if_unchanged(spec, old_spec, "ipFamilies");
        drop_if_unchanged(spec, old_spec, "ipFamilyPolicy");
        drop_if_unchanged(spec, old_spec, "internalTrafficPolicy");
    }
    if (needs_node_ports(old) && !needs_node_ports(obj)) {
        size_t i;
        json_t *port;
        json_array_foreach(json_object_get(spec, "ports"), i, port)
        {
            const json_t *was = old_port(old, port);
            json_t *node_port = json_object_get(port, "nodePort");
            if (node_port && json_equal(node_port, json_object_get(was, "nodePort")))
                json_object_del(port, "nodePort");
        }
    }
    bool external = strcmp(service_type(obj), "NodePort") == 0 ||
                    strcmp(service_type(obj), "LoadBalancer") == 0;
    if (!external)
        drop_if_unchanged(spec, old_spec, "externalTrafficPolicy");
    if (strcmp(service_type(obj), "LoadBalancer") != 0) {
        drop_if_unchanged(spec, old_spec, "allocateLoadBalancerNodePorts");
        drop_if_unchanged(spec, old_spec, "loadBalancerClass");
        drop_if_unchanged(spec, old_spec, "healthCheckNodePort");
    }
}

/* An update that leaves out what the server allocated keeps it. */
static int prepare_for_update(json_t *obj, const json_t *old)
{
    json_t *spec = json_object_get(obj, "spec");
    if (!json_is_object(spec))
        return 0;
    drop_type_dependent_fields(spec, obj, old);
    const char *ip = json_string_value(json_object_get(spec, "clusterIP"));
    const char *old_ip = ck__str_at(old, "spec.clusterIP");
    if ((!ip || !*ip) && old_ip && *old_ip && strcmp(service_type(obj), "ExternalName") != 0 &&
        strcmp(service_type(old), "ExternalName") != 0) {
        if (set_string(spec, "clusterIP", old_ip) < 0)
            return CK_ENOMEM;
        const json_t *old_ips = ck__json_path(old, "spec.clusterIPs");
        json_t *ips = ck__json_copy(old_ips);
        if (old_ips && (!ips || json_object_set_new(spec, "clusterIPs", ips) < 0))
            return CK_ENOMEM;
    }
    if (needs_node_ports(obj) && needs_node_ports(old)) {
        size_t i;
        json_t *port;
        json_array_foreach(json_object_get(spec, "ports"), i, port)
        {
            const json_t *was = old_port(old, port);
            json_int_t node_port = json_integer_value(json_object_get(port, "nodePort"));
            json_int_t old_node_port = json_integer_value(json_object_get(was, "nodePort"));
            if (node_port == 0 && old_node_port > 0 &&
                json_object_set_new(port, "nodePort", json_integer(old_node_port)) < 0)
                return CK_ENOMEM;
        }
    }
    return 0;
}

static int defaults(json_t *obj)
{
    json_t *spec = json_object_get(obj, "spec");
    if (!json_is_object(spec))
        return 0;
    const char *type = service_type(obj);
    bool external_name = strcmp(type, "ExternalName") == 0;
    size_t i;
    json_t *port;
    json_array_foreach(json_object_get(spec, "ports"), i, port)
    {
        const json_t *target = json_object_get(port, "targetPort");
        if ((!target || (json_is_integer(target) && json_integer_value(target) == 0) ||
             (json_is_string(target) && !*json_string_value(target))) &&
            json_object_set_new(port, "targetPort",
                                json_integer(json_integer_value(json_object_get(port, "port")))) <
                0)
            return CK_ENOMEM;
    }
    bool node_ports = strcmp(type, "NodePort") == 0 || strcmp(type, "LoadBalancer") == 0;
    if (node_ports && !json_object_get(spec, "externalTrafficPolicy") &&
        set_string(spec, "externalTrafficPolicy", "Cluster") < 0)
        return CK_ENOMEM;
    if (strcmp(type, "LoadBalancer") == 0 &&
        !json_object_get(spec, "allocateLoadBalancerNodePorts") &&
        json_object_set_new(spec, "allocateLoadBalancerNodePorts", json_true()) < 0)
        return CK_ENOMEM;
    if (external_name)
        return 0;
    if (!json_object_get(spec, "internalTrafficPolicy") &&
        set_string(spec, "internalTrafficPolicy", "Cluster") < 0)
        return CK_ENOMEM;
    /* clusterIP and clusterIPs[0] are one value */
    const char *ip = json_string_value(json_object_get(spec, "clusterIP"));
    json_t *ips = json_object_get(spec, "clusterIPs");
    const char *first = json_string_value(json_array_get(ips, 0));
    if (ip && *ip && json_array_size(ips) == 0 &&
        json_object_set_new(spec, "clusterIPs", json_pack("[s]", ip)) < 0)
        return CK_ENOMEM;
    if ((!ip || !*ip) && first && set_string(spec, "clusterIP", first) < 0)
        return CK_ENOMEM;
    ip = json_string_value(json_object_get(spec, "clusterIP"));
    if (ip && *ip && !json_object_get(spec, "ipFamilyPolicy") &&
        set_string(spec, "ipFamilyPolicy", "SingleStack") < 0)
        return CK_ENOMEM;
    if (ip && *ip && !json_object_get(spec, "ipFamilies") &&
        json_object_set_new(spec, "ipFamilies", json_pack("[s]", "IPv4")) < 0)
        return CK_ENOMEM;
    return 0;
}

static bool is_ip(const char *text)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, text, buf) == 1 || inet_pton(AF_INET6, text, buf) == 1;
}

static void validate_ports(const json_t *obj, const char *type, struct ck_field_errors *errs)
{
    const json_t *ports = ck__json_path(obj, "spec.ports");
    size_t n = json_array_size(ports), i;
    const json_t *port;
    bool cluster_ip_type = strcmp(type, "ClusterIP") == 0;
    json_array_foreach(ports, i, port)
    {
        char path[96], field[128];
        snprintf(path, sizeof(path), "spec.ports[%zu]", i);
        const char *name = json_string_value(json_object_get(port, "name"));
        snprintf(field, sizeof(field), "%s.name", path);
        if (n > 1 && (!name || !*name))
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, field, NULL, false, NULL);
        else if (name && *name)
            ck_validate_dns1123_label(name, field, errs);
        json_int_t number = json_integer_value(json_object_get(port, "port"));
        const char *protocol = json_string_value(json_object_get(port, "protocol"));
        for (size_t j = 0; j < i; j++) {
            const json_t *other = json_array_get(ports, j);
            const char *other_name = json_string_value(json_object_get(other, "name"));
            if (name && *name && other_name && strcmp(name, other_name) == 0) {
                ck_field_errors_add(errs, CK_FIELD_DUPLICATE, field, name, true, NULL);
                break;
            }
        }
        for (size_t j = 0; j < i; j++) {
            const json_t *other = json_array_get(ports, j);
            const char *other_protocol = json_string_value(json_object_get(other, "protocol"));
            if (json_integer_value(json_object_get(other, "port")) == number &&
                strcmp(protocol ? protocol : "TCP", other_protocol ? other_protocol : "TCP") == 0) {
                char value[64];
                snprintf(value, sizeof(value), "{%s %lld}", protocol ? protocol : "TCP",
                         (long long)number);
                ck_field_errors_add(errs, CK_FIELD_DUPLICATE, path, value, false, NULL);
                break;
            }
        }
        char value[32];
        snprintf(field, sizeof(field), "%s.port", path);
        snprintf(value, sizeof(value), "%lld", (long long)number);
        if (number < 1 || number > 65535)
            ck_field_errors_add(errs, CK_FIELD_INVALID, field, value, false,
                                "must be between 1 and 65535, inclusive");
        const json_t *target = json_object_get(port, "targetPort");
        snprintf(field, sizeof(field), "%s.targetPort", path);
        if (json_is_integer(target) &&
            (json_integer_value(target) < 1 || json_integer_value(target) > 65535)) {
            snprintf(value, sizeof(value), "%lld", (long long)json_integer_value(target));
            ck_field_errors_add(errs, CK_FIELD_INVALID, field, value, false,
                                "must be between 1 and 65535, inclusive");
        } else if (json_is_string(target)) {
            ck_validate_dns1123_label(json_string_value(target), field, errs);
        }
        json_int_t node_port = json_integer_value(json_object_get(port, "nodePort"));
        snprintf(field, sizeof(field), "%s.nodePort", path);
        if (cluster_ip_type && node_port != 0)
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, field, NULL, false,
                                "may not be used when `type` is 'ClusterIP'");
    }
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    const char *type = service_type(obj);
    bool external_name = strcmp(type, "ExternalName") == 0;
    const char *ip = ck__str_at(obj, "spec.clusterIP");
    bool headless = ip && strcmp(ip, "None") == 0;
    if (json_array_size(ck__json_path(obj, "spec.ports")) == 0 && !headless && !external_name)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.ports", NULL, false, NULL);
    validate_ports(obj, type, errs);
    const json_t *ips = ck__json_path(obj, "spec.clusterIPs");
    if (external_name) {
        const char *name = ck__str_at(obj, "spec.externalName");
        if (!name || !*name)
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.externalName", NULL, false, NULL);
        else
            ck_validate_dns1123_subdomain(name, "spec.externalName", errs);
        if ((ip && *ip) || json_array_size(ips) > 0)
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "spec.clusterIPs", NULL, false,
                                "may not be set for ExternalName services");
    } else {
        size_t i;
        const json_t *each;
        json_array_foreach(ips, i, each)
        {
            const char *text = json_string_value(each);
            char field[64];
            snprintf(field, sizeof(field), "spec.clusterIPs[%zu]", i);
            if (!text || (strcmp(text, "None") != 0 && !is_ip(text)))
                ck_field_errors_add(
                    errs, CK_FIELD_INVALID, field, text ? text : "", true,
                    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)");
        }
        const char *first = json_string_value(json_array_get(ips, 0));
        if (ip && *ip && first && strcmp(ip, first) != 0)
            ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.clusterIPs", first, true,
                                "first value must match `clusterIP`");
    }
    const char *etp = ck__str_at(obj, "spec.externalTrafficPolicy");
    if (etp && *etp && strcmp(type, "NodePort") != 0 && strcmp(type, "LoadBalancer") != 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.externalTrafficPolicy", etp, true,
                            "may only be set when `type` is 'NodePort' or 'LoadBalancer'");
    if (!old || external_name || strcmp(service_type(old), "ExternalName") == 0)
        return;
    const char *old_ip = ck__str_at(old, "spec.clusterIP");
    if (old_ip && *old_ip && (!ip || strcmp(ip, old_ip) != 0))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.clusterIPs[0]", ip ? ip : "", true,
                            "may not change once set");
}

/* kubectl's PORT(S): 80/TCP, or 80:30080/TCP with a node port; <none> without ports. */
static json_t *ports_cell(const json_t *ports)
{
    size_t i;
    const json_t *port;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        return NULL;
    json_array_foreach(ports, i, port)
    {
        const char *protocol = json_string_value(json_object_get(port, "protocol"));
        long long number = (long long)json_integer_value(json_object_get(port, "port"));
        long long node_port = (long long)json_integer_value(json_object_get(port, "nodePort"));
        if (i > 0)
            fputc(',', out);
        if (node_port > 0)
            fprintf(out, "%lld:%lld/%s", number, node_port, protocol ? protocol : "TCP");
        else
            fprintf(out, "%lld/%s", number, protocol ? protocol : "TCP");
    }
    if (fclose(out) != 0) {
        free(text);
        return NULL;
    }
    json_t *cell = json_string(len ? text : "<none>");
    free(text);
    return cell;
}

/* kubectl's EXTERNAL-IP: external IPs, a load balancer's ingress or <pending>, the external name.
 */
static json_t *external_ip_cell(const json_t *obj, const char *type)
{
    if (strcmp(type, "ExternalName") == 0)
        return json_string(ck__or_none(ck__str_at(obj, "spec.externalName")));
    json_t *all = json_array();
    if (!all)
        return NULL;
    size_t i;
    const json_t *each;
    if (strcmp(type, "LoadBalancer") == 0) {
        json_array_foreach(ck__json_path(obj, "status.loadBalancer.ingress"), i, each)
        {
            const char *ip = json_string_value(json_object_get(each, "ip"));
            const char *host = json_string_value(json_object_get(each, "hostname"));
            if ((ip && *ip) || (host && *host))
                json_array_append_new(all, json_pack("{s:s}", "v", ip && *ip ? ip : host));
        }
    }
    json_array_foreach(ck__json_path(obj, "spec.externalIPs"), i, each)
        json_array_append_new(all, json_pack("{s:O}", "v", each));
    size_t total = 1;
    json_array_foreach(all, i, each) total +=
        strlen(json_string_value(json_object_get(each, "v")) ?: "") + 1;
    char *buf = ck__calloc(1, total);
    if (!buf) {
        json_decref(all);
        return NULL;
    }
    json_array_foreach(all, i, each)
    {
        if (i > 0)
            strcat(buf, ",");
        strcat(buf, json_string_value(json_object_get(each, "v")) ?: "");
    }
    bool none = json_array_size(all) == 0;
    json_decref(all);
    json_t *cell = json_string(!none                               ? buf
                               : strcmp(type, "LoadBalancer") == 0 ? "<pending>"
                                                                   : "<none>");
    free(buf);
    return cell;
}

static json_t *selector_cell(const json_t *selector)
{
    if (json_object_size(selector) == 0)
        return json_string("<none>");
    json_t *wrapped = json_pack("{s:O}", "matchLabels", selector);
    struct ck_label_selector *s = NULL;
    int r = wrapped ? ck_label_selector_from_object(wrapped, &s, NULL) : CK_ENOMEM;
    json_decref(wrapped);
    if (r < 0)
        return r == CK_ENOMEM ? NULL : json_string("<error>");
    char *text = ck_label_selector_string(s);
    ck_label_selector_free(s);
    json_t *cell = text ? json_string(text) : NULL;
    free(text);
    return cell;
}

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    const char *type = service_type(obj);
    const char *ip = ck__str_at(obj, "spec.clusterIP");
    cells[COL_TYPE] = json_string(type);
    cells[COL_CLUSTER_IP] = json_string(ck__or_none(ip));
    cells[COL_EXTERNAL_IP] = external_ip_cell(obj, type);
    cells[COL_PORTS] = ports_cell(ck__json_path(obj, "spec.ports"));
    cells[COL_SELECTOR] = selector_cell(ck__json_path(obj, "spec.selector"));
}

static const char *const short_names[] = {"svc", NULL};
static const char *const categories[] = {"all", NULL};
static const struct ck_subresource subresources[] = {
    CK__PROXY_SUBRESOURCE("ServiceProxyOptions"),
    CK__STATUS_SUBRESOURCE,
};

static const struct ck_field_label field_labels[] = {
    {"spec.clusterIP", "spec.clusterIP", CK_FIELD_LABEL_STRING},
    {"spec.type", "spec.type", CK_FIELD_LABEL_STRING},
};

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_TYPE] = CK__COMPUTED_COLUMN("Type", "string", "The type of service.", 0),
    [COL_CLUSTER_IP] =
        CK__COMPUTED_COLUMN("Cluster-IP", "string", "The cluster IP of the service.", 0),
    [COL_EXTERNAL_IP] =
        CK__COMPUTED_COLUMN("External-IP", "string", "The external IP of the service.", 0),
    [COL_PORTS] = CK__COMPUTED_COLUMN("Port(s)", "string", "The ports the service exposes.", 0),
    [COL_AGE] = CK__AGE_COLUMN,
    [COL_SELECTOR] = CK__COMPUTED_COLUMN(
        "Selector", "string",
        "Route service traffic to pods with label keys and values matching this selector.", 1),
};

const struct ck_kind ck__kind_service = {
    .group = "",
    .version = "v1",
    .kind = "Service",
    .list_kind = "ServiceList",
    .resource = "services",
    .singular = "service",
    .short_names = short_names,
    .categories = categories,
    .namespaced = true,
    .role = CK_KIND_ROLE_SERVICE,
    .schema = "io.k8s.api.core.v1.Service",
    CK__KIND_SUBRESOURCES(subresources),
    .status_keeps_metadata = ck__status_keeps_labels,
    CK__KIND_FIELD_LABELS(field_labels),
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .prepare_for_create = prepare_for_create,
    .prepare_for_update = prepare_for_update,
    .defaults = defaults,
    .validate = validate,
};
