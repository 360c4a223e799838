/*
 * ingress.c - the Ingress kind (networking.k8s.io/v1): HTTP routes from hosts
 * and paths to Services, for an ingress controller to implement.
 *
 * Mirrors Kubernetes' pkg/registry/networking/ingress/strategy.go and
 * ValidateIngressCreate/ValidateIngressSpec in
 * pkg/apis/networking/validation: the server owns status (a create starts
 * with none; the main resource never changes it); a generation counts spec
 * changes. A spec needs rules or a defaultBackend; hosts are DNS names (a
 * leading "*." allowed), never IP addresses; every path has a pathType
 * (Exact and Prefix want an absolute path without "//", "/./", "/../", "%2f"
 * or a trailing "/." or "/.."); a backend is a service (a DNS-1035 name and a
 * port name or number) or a resource, never both; TLS hosts are DNS names and
 * secret names DNS subdomains; the kubernetes.io/ingress.class annotation
 * must match spec.ingressClassName when both are given. The printer shows
 * NAME, CLASS, HOSTS, ADDRESS, PORTS and AGE as kube-apiserver's table does
 * (wide, as the server prints: addresses are not shortened).
 *
 * Kubernetes' DefaultIngressClass admission (the default class filled in on
 * create) is not done here: a kind's hooks see no other object
 * (docs/differences.md).
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_networking.c and tests/e2e/test_kinds.sh.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "../internal.h"

static bool is_ip(const char *s)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/* apimachinery's IsValidPortName (an IANA service name). */
void ck__validate_port_name(const char *name, const char *path, struct ck_field_errors *errs)
{
    size_t n = strlen(name);
    bool letter = false, bad = false;
    if (n > 15)
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, name, true,
                            "must be no more than 15 characters");
    for (const char *p = name; *p; p++) {
        if (*p >= 'a' && *p <= 'z')
            letter = true;
        else if (!(*p >= '0' && *p <= '9') && *p != '-')
            bad = true;
    }
    if (bad)
        ck_field_errors_add(
            errs, CK_FIELD_INVALID, path, name, true,
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
    if (strstr(name, "--"))
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, name, true,
                            "must not contain consecutive hyphens");
    if (n && !letter)
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, name, true,
                            "must contain at least one letter (a-z)");
    if (n && (name[0] == '-' || name[n - 1] == '-'))
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, name, true,
                            "must not begin or end with a hyphen");
}

static void validate_host(const char *host, const char *path, struct ck_field_errors *errs)
{
    if (is_ip(host))
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, host, true,
                            "must be a DNS name, not an IP address");
    if (strncmp(host, "*.", 2) == 0) {
        struct ck_field_errors local = {0};
        if (!ck_validate_dns1123_subdomain(host + 2, path, &local))
            ck_field_errors_add(
                errs, CK_FIELD_INVALID, path, host, true,
                "a wildcard DNS-1123 subdomain must start with '*.', followed by a "
                "valid DNS subdomain, which must consist of lower case "
                "alphanumeric characters, '-' or '.' and end with an alphanumeric "
                "character (e.g. '*.example.com', regex used for validation is "
                "'\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
        ck_field_errors_release(&local);
    } else if (strchr(host, '*')) {
        ck_field_errors_add(
            errs, CK_FIELD_INVALID, path, host, true,
            "a wildcard DNS-1123 subdomain must start with '*.', followed by a "
            "valid DNS subdomain, which must consist of lower case alphanumeric "
            "characters, '-' or '.' and end with an alphanumeric character (e.g. "
            "'*.example.com', regex used for validation is "
            "'\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
    } else {
        ck_validate_dns1123_subdomain(host, path, errs);
    }
}

static void validate_service_name(const char *name, const char *path, struct ck_field_errors *errs)
{
    if (!ck_validate_dns1123_label(name, path, NULL) || !(name[0] >= 'a' && name[0] <= 'z'))
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, name, true,
                            "a DNS-1035 label must consist of lower case alphanumeric characters "
                            "or '-', start with an alphabetic character, and end with an "
                            "alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used "
                            "for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')");
}

static void validate_backend(const json_t *backend, const char *path, struct ck_field_errors *errs)
{
    const json_t *resource = json_object_get(backend, "resource");
    const json_t *service = json_object_get(backend, "service");
    char f[192]; /* path is at most a path entry's (< 128) */
    if (resource && service) {
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, "", true,
                            "cannot set both resource and service backends");
        return;
    }
    if (resource) {
        const char *group = ck__str_at(resource, "apiGroup");
        const char *kind = ck__str_at(resource, "kind");
        const char *name = ck__str_at(resource, "name");
        if (group) {
            snprintf(f, sizeof(f), "%s.resource.apiGroup", path);
            ck_validate_dns1123_subdomain(group, f, errs);
        }
        snprintf(f, sizeof(f), "%s.resource.kind", path);
        if (!kind || !*kind)
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false, NULL);
        else
            ck__validate_path_segment(kind, f, errs);
        snprintf(f, sizeof(f), "%s.resource.name", path);
        if (!name || !*name)
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false, NULL);
        else
            ck__validate_path_segment(name, f, errs);
        return;
    }
    if (!service) {
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, "", true,
                            "resource or service backend is required");
        return;
    }
    const char *name = ck__str_at(service, "name");
    snprintf(f, sizeof(f), "%s.service.name", path);
    if (!name || !*name)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false, NULL);
    else
        validate_service_name(name, f, errs);
    const char *port_name = ck__str_at(service, "port.name");
    long long number = ck__int_at(service, "port.number");
    bool has_name = port_name && *port_name;
    if (has_name && number != 0) {
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, "", true,
                            "cannot set both port name & port number");
    } else if (has_name) {
        snprintf(f, sizeof(f), "%s.service.port.name", path);
        ck__validate_port_name(port_name, f, errs);
    } else if (number != 0) {
        if (number < 1 || number > 65535) {
            char v[32];
            snprintf(f, sizeof(f), "%s.service.port.number", path);
            snprintf(v, sizeof(v), "%lld", number);
            ck_field_errors_add(errs, CK_FIELD_INVALID, f, v, false,
                                "must be between 1 and 65535, inclusive");
        }
    } else {
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, path, NULL, false,
                            "port name or number is required");
    }
}

static void validate_path(const json_t *p, const char *at, struct ck_field_errors *errs)
{
    char f[128]; /* at is "spec.rules[i].http.paths[j]" (< 96) */
    const char *type = ck__str_at(p, "pathType");
    const char *path = ck__str_at(p, "path");
    if (!path)
        path = "";
    if (!type) {
        snprintf(f, sizeof(f), "%s.pathType", at);
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false, "pathType must be specified");
        return;
    }
    snprintf(f, sizeof(f), "%s.path", at);
    if (strcmp(type, "Exact") == 0 || strcmp(type, "Prefix") == 0) {
        static const char *const sequences[] = {"//", "/./", "/../", "%2f", "%2F"};
        static const char *const suffixes[] = {"/..", "/."};
        if (path[0] != '/')
            ck_field_errors_add(errs, CK_FIELD_INVALID, f, path, true, "must be an absolute path");
        for (size_t i = 0; *path && i < CK__COUNT(sequences); i++)
            if (strstr(path, sequences[i]))
                ck_field_errors_add(errs, CK_FIELD_INVALID, f, path, true, "must not contain '%s'",
                                    sequences[i]);
        size_t n = strlen(path);
        for (size_t i = 0; *path && i < CK__COUNT(suffixes); i++) {
            size_t m = strlen(suffixes[i]);
            if (n >= m && strcmp(path + n - m, suffixes[i]) == 0)
                ck_field_errors_add(errs, CK_FIELD_INVALID, f, path, true, "cannot end with '%s'",
                                    suffixes[i]);
        }
    } else if (strcmp(type, "ImplementationSpecific") == 0) {
        if (*path && path[0] != '/')
            ck_field_errors_add(errs, CK_FIELD_INVALID, f, path, true, "must be an absolute path");
    } else {
        snprintf(f, sizeof(f), "%s.pathType", at);
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, f, type, true,
                            "supported values: \"Exact\", \"ImplementationSpecific\", \"Prefix\"");
    }
    snprintf(f, sizeof(f), "%s.backend", at);
    validate_backend(json_object_get(p, "backend"), f, errs);
}

static void validate_rules(const json_t *rules, struct ck_field_errors *errs)
{
    size_t i, j;
    const json_t *rule, *p;
    char f[96];
    json_array_foreach(rules, i, rule)
    {
        const char *host = ck__str_at(rule, "host");
        if (host && *host) {
            snprintf(f, sizeof(f), "spec.rules[%zu].host", i);
            validate_host(host, f, errs);
        }
        const json_t *http = json_object_get(rule, "http");
        if (!http)
            continue;
        const json_t *paths = json_object_get(http, "paths");
        if (json_array_size(paths) == 0) {
            snprintf(f, sizeof(f), "spec.rules[%zu].http.paths", i);
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false, NULL);
        }
        json_array_foreach(paths, j, p)
        {
            snprintf(f, sizeof(f), "spec.rules[%zu].http.paths[%zu]", i, j);
            validate_path(p, f, errs);
        }
    }
}

static void validate_tls(const json_t *tls, struct ck_field_errors *errs)
{
    size_t i, j;
    const json_t *t, *h;
    char f[256];
    json_array_foreach(tls, i, t)
    {
        json_array_foreach(json_object_get(t, "hosts"), j, h)
        {
            snprintf(f, sizeof(f), "spec.tls[%zu].hosts[%zu]", i, j);
            const char *host = json_string_value(h);
            if (!host)
                continue;
            if (strchr(host, '*'))
                validate_host(host, f, errs);
            else
                ck_validate_dns1123_subdomain(host, f, errs);
        }
        const char *secret = ck__str_at(t, "secretName");
        if (secret && *secret) {
            snprintf(f, sizeof(f), "spec.tls[%zu].secretName", i);
            ck_validate_dns1123_subdomain(secret, f, errs);
        }
    }
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *rules = json_object_get(spec, "rules");
    const json_t *backend = json_object_get(spec, "defaultBackend");
    if (json_array_size(rules) == 0 && !backend)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec", "null", false,
                            "either `defaultBackend` or `rules` must be specified");
    if (backend)
        validate_backend(backend, "spec.defaultBackend", errs);
    validate_rules(rules, errs);
    validate_tls(json_object_get(spec, "tls"), errs);
    const char *cls = ck__str_at(spec, "ingressClassName");
    if (cls)
        ck_validate_dns1123_subdomain(cls, "spec.ingressClassName", errs);
    if (!old && cls) {
        const json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
        const char *v = json_string_value(json_object_get(ann, "kubernetes.io/ingress.class"));
        if (v && strcmp(v, cls) != 0)
            ck_field_errors_add(errs, CK_FIELD_INVALID, "annotations.kubernetes.io/ingress.class",
                                v, true, "must match `ingressClassName` when both are specified");
    }
}

static int prepare_for_create(json_t *obj)
{
    return json_object_set_new(obj, "status", json_object()) < 0 ? CK_ENOMEM : 0;
}

enum {
    COL_NAME,
    COL_CLASS,
    COL_HOSTS,
    COL_ADDRESS,
    COL_PORTS,
    COL_AGE,
};

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    char buf[1024];
    size_t len = 0, n = 0, i;
    const json_t *rule, *lb;
    const json_t *rules = ck__json_path(obj, "spec.rules");
    bool more = false;
    buf[0] = 0;
    json_array_foreach(rules, i, rule)
    {
        if (n == 3)
            more = true;
        const char *host = ck__str_at(rule, "host");
        if (!more && host && *host) {
            len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", n ? "," : "", host);
            if (len >= sizeof(buf))
                len = sizeof(buf) - 1;
            n++;
        }
    }
    if (n == 0)
        snprintf(buf, sizeof(buf), "*");
    else if (more)
        snprintf(buf + len, sizeof(buf) - len, " + %zu more...", json_array_size(rules) - 3);
    cells[COL_HOSTS] = json_string(buf);

    len = 0;
    buf[0] = 0;
    json_array_foreach(ck__json_path(obj, "status.loadBalancer.ingress"), i, lb)
    {
        const char *a = ck__str_at(lb, "ip");
        if (!a || !*a)
            a = ck__str_at(lb, "hostname");
        if (!a || !*a)
            continue;
        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", len ? "," : "", a);
        if (len >= sizeof(buf))
            len = sizeof(buf) - 1;
    }
    cells[COL_ADDRESS] = json_string(buf);
    cells[COL_PORTS] =
        json_string(json_array_size(ck__json_path(obj, "spec.tls")) ? "80, 443" : "80");
}

static const char *const short_names[] = {"ing", NULL};
static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_CLASS] = {"Class", "string", "",
                   "The name of the IngressClass resource that should be used for this Ingress.", 0,
                   ".spec.ingressClassName", CK_CELL_ABSENT_NONE, false},
    [COL_HOSTS] = CK__COMPUTED_COLUMN("Hosts", "string",
                                      "Hosts that incoming requests are matched "
                                      "against before the ingress rule",
                                      0),
    [COL_ADDRESS] =
        CK__COMPUTED_COLUMN("Address", "string",
                            "Address is a list containing ingress points for the load-balancer", 0),
    [COL_PORTS] =
        CK__COMPUTED_COLUMN("Ports", "string", "Ports of TLS configurations that open", 0),
    [COL_AGE] = CK__AGE_COLUMN,
};

const struct ck_kind ck__kind_ingress = {
    .group = "networking.k8s.io",
    .version = "v1",
    .kind = "Ingress",
    .list_kind = "IngressList",
    .resource = "ingresses",
    .singular = "ingress",
    .short_names = short_names,
    .namespaced = true,
    .has_generation = true,
    .schema = "io.k8s.api.networking.v1.Ingress",
    CK__KIND_SUBRESOURCES(ck__status_subresource),
    .status_keeps_metadata = ck__status_keeps_labels,
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .prepare_for_create = prepare_for_create,
    .validate = validate,
};
