/*
 * endpoints.c - the Endpoints kind (core/v1): the legacy list of a
 * service's endpoints, one object named as the Service, addresses grouped
 * by ports into subsets. EndpointSlices supersede it; the endpointslice
 * controller (lib/controllers/endpointslice) still keeps one per Service
 * with a selector, as Kubernetes' endpoints controller does.
 *
 * Mirrors Kubernetes' pkg/registry/core/endpoint and ValidateEndpoints:
 * every address an IP, ports 1-65535, named (DNS-1123 labels) when a subset
 * has several. kubectl prints NAME, ENDPOINTS (the first three ready
 * ip:port, `+ N more...`) and AGE; short name ep.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 * Tested by tests/api/test_service.c and the endpointslice controller's tests.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "ckube/internal/util.h"

#define SHOWN 3

enum { COL_NAME, COL_ENDPOINTS, COL_AGE };

static bool is_ip(const char *text)
{
    unsigned char buf[16];
    return text && (inet_pton(AF_INET, text, buf) == 1 || inet_pton(AF_INET6, text, buf) == 1);
}

static void validate_addresses(const json_t *addresses, size_t at, const char *list,
                               struct ck_field_errors *errs)
{
    size_t i;
    const json_t *a;
    json_array_foreach(addresses, i, a)
    {
        const char *ip = json_string_value(json_object_get(a, "ip"));
        char path[96];
        snprintf(path, sizeof(path), "subsets[%zu].%s[%zu].ip", at, list, i);
        if (!is_ip(ip))
            ck_field_errors_add(errs, CK_FIELD_INVALID, path, ip ? ip : "", true,
                                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)");
    }
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    (void)old;
    size_t i;
    const json_t *subset;
    json_array_foreach(json_object_get(obj, "subsets"), i, subset)
    {
        validate_addresses(json_object_get(subset, "addresses"), i, "addresses", errs);
        validate_addresses(json_object_get(subset, "notReadyAddresses"), i, "notReadyAddresses",
                           errs);
        const json_t *ports = json_object_get(subset, "ports");
        size_t j;
        const json_t *port;
        json_array_foreach(ports, j, port)
        {
            char path[96], value[32];
            const char *name = json_string_value(json_object_get(port, "name"));
            snprintf(path, sizeof(path), "subsets[%zu].ports[%zu].name", i, j);
            if (json_array_size(ports) > 1 && (!name || !*name))
                ck_field_errors_add(errs, CK_FIELD_REQUIRED, path, NULL, false, NULL);
            else if (name && *name)
                ck_validate_dns1123_label(name, path, errs);
            json_int_t number = json_integer_value(json_object_get(port, "port"));
            snprintf(path, sizeof(path), "subsets[%zu].ports[%zu].port", i, j);
            snprintf(value, sizeof(value), "%lld", (long long)number);
            if (number < 1 || number > 65535)
                ck_field_errors_add(errs, CK_FIELD_INVALID, path, value, false,
                                    "must be between 1 and 65535, inclusive");
        }
    }
}

/* kubectl's formatEndpoints: ready ip:port (or ip without ports), three at most. */
static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    const json_t *subsets = json_object_get(obj, "subsets");
    if (json_array_size(subsets) == 0) {
        cells[COL_ENDPOINTS] = json_string("<none>");
        return;
    }
    char shown[SHOWN][80];
    size_t n = 0, i, j, k;
    const json_t *subset, *port, *address;
    json_array_foreach(subsets, i, subset)
    {
        const json_t *ports = json_object_get(subset, "ports");
        const json_t *addresses = json_object_get(subset, "addresses");
        if (json_array_size(ports) == 0) {
            json_array_foreach(addresses, k, address)
            {
                if (n < SHOWN)
                    snprintf(shown[n], sizeof(shown[n]), "%s",
                             json_string_value(json_object_get(address, "ip")) ?: "");
                n++;
            }
            continue;
        }
        json_array_foreach(ports, j, port)
        {
            json_array_foreach(addresses, k, address)
            {
                const char *ip = json_string_value(json_object_get(address, "ip")) ?: "";
                long long number = (long long)json_integer_value(json_object_get(port, "port"));
                if (n < SHOWN)
                    snprintf(shown[n], sizeof(shown[n]), strchr(ip, ':') ? "[%s]:%lld" : "%s:%lld",
                             ip, number);
                n++;
            }
        }
    }
    char buf[SHOWN * 81 + 32] = "";
    for (i = 0; i < n && i < SHOWN; i++) {
        if (i > 0)
            strcat(buf, ",");
        strcat(buf, shown[i]);
    }
    if (n > SHOWN)
        snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), " + %zu more...", n - SHOWN);
    cells[COL_ENDPOINTS] = json_string(buf);
}

static const char *const short_names[] = {"ep", NULL};

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_ENDPOINTS] = CK__COMPUTED_COLUMN("Endpoints", "string", "Endpoints of the service.", 0),
    [COL_AGE] = CK__AGE_COLUMN,
};

const struct ck_kind ck__kind_endpoints = {
    .group = "",
    .version = "v1",
    .kind = "Endpoints",
    .list_kind = "EndpointsList",
    .resource = "endpoints",
    .singular = "endpoints",
    .short_names = short_names,
    .namespaced = true,
    .schema = "io.k8s.api.core.v1.Endpoints",
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .validate = validate,
};
