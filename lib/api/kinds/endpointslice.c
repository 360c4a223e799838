/*
 * endpointslice.c - the EndpointSlice kind (discovery.k8s.io/v1): a subset
 * of the endpoints of a service, which the endpointslice controller writes
 * (lib/controllers/endpointslice) and proxies and DNS read.
 *
 * Mirrors Kubernetes' pkg/registry/discovery/endpointslice and
 * ValidateEndpointSlice: addressType is required and immutable; at most 1000
 * endpoints, each with 1 to 100 addresses valid for the address type; at
 * most 20000 ports, named as DNS-1123 labels when named. kubectl prints NAME,
 * ADDRESSTYPE, PORTS (the first three, `+ N more...`), ENDPOINTS (the first
 * three addresses) and AGE.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 * Tested by tests/api/test_kinds.c and test_service.c, and the controller's tests.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "ckube/internal/util.h"

#define MAX_ENDPOINTS 1000
#define MAX_ADDRESSES 100
#define MAX_PORTS     20000
#define SHOWN         3

enum { COL_NAME, COL_ADDRESS_TYPE, COL_PORTS, COL_ENDPOINTS, COL_AGE };

static bool valid_address(const char *type, const char *address)
{
    unsigned char buf[16];
    if (strcmp(type, "IPv4") == 0)
        return inet_pton(AF_INET, address, buf) == 1;
    if (strcmp(type, "IPv6") == 0)
        return inet_pton(AF_INET6, address, buf) == 1;
    return ck_validate_dns1123_subdomain(address, "", NULL);
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    const char *type = json_string_value(json_object_get(obj, "addressType"));
    const json_t *endpoints = json_object_get(obj, "endpoints");
    const json_t *ports = json_object_get(obj, "ports");
    char path[96], value[64];
    if (json_array_size(endpoints) > MAX_ENDPOINTS)
        ck_field_errors_add(errs, CK_FIELD_TOO_LONG, "endpoints", NULL, false,
                            "must have at most %d items", MAX_ENDPOINTS);
    size_t i;
    const json_t *ep;
    json_array_foreach(endpoints, i, ep)
    {
        const json_t *addresses = json_object_get(ep, "addresses");
        snprintf(path, sizeof(path), "endpoints[%zu].addresses", i);
        if (json_array_size(addresses) == 0)
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, path, NULL, false,
                                "must contain at least 1 address");
        else if (json_array_size(addresses) > MAX_ADDRESSES)
            ck_field_errors_add(errs, CK_FIELD_TOO_LONG, path, NULL, false,
                                "must have at most %d items", MAX_ADDRESSES);
        size_t j;
        const json_t *address;
        json_array_foreach(addresses, j, address)
        {
            const char *text = json_string_value(address);
            snprintf(path, sizeof(path), "endpoints[%zu].addresses[%zu]", i, j);
            if (type && text && !valid_address(type, text))
                ck_field_errors_add(errs, CK_FIELD_INVALID, path, text, true,
                                    strcmp(type, "FQDN") == 0
                                        ? "must be a valid FQDN"
                                        : "must be a valid IP address, (e.g. 10.9.8.7 or "
                                          "2001:db8::ffff)");
        }
        const char *hostname = json_string_value(json_object_get(ep, "hostname"));
        snprintf(path, sizeof(path), "endpoints[%zu].hostname", i);
        if (hostname)
            ck_validate_dns1123_label(hostname, path, errs);
    }
    if (json_array_size(ports) > MAX_PORTS)
        ck_field_errors_add(errs, CK_FIELD_TOO_LONG, "ports", NULL, false,
                            "must have at most %d items", MAX_PORTS);
    const json_t *port;
    json_array_foreach(ports, i, port)
    {
        const char *name = json_string_value(json_object_get(port, "name"));
        snprintf(path, sizeof(path), "ports[%zu].name", i);
        if (name && *name)
            ck_validate_dns1123_label(name, path, errs);
        const json_t *number = json_object_get(port, "port");
        snprintf(path, sizeof(path), "ports[%zu].port", i);
        snprintf(value, sizeof(value), "%lld", (long long)json_integer_value(number));
        if (number && (json_integer_value(number) < 1 || json_integer_value(number) > 65535))
            ck_field_errors_add(errs, CK_FIELD_INVALID, path, value, false,
                                "must be between 1 and 65535, inclusive");
    }
    const char *old_type = old ? json_string_value(json_object_get(old, "addressType")) : NULL;
    if (old_type && type && strcmp(old_type, type) != 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "addressType", type, true,
                            "field is immutable");
}

/* kubectl's listWithMoreString: the first three, `+ N more...`, <unset> when none. */
static json_t *list_cell(char *const *items, size_t n)
{
    size_t total = 32;
    for (size_t i = 0; i < n && i < SHOWN; i++)
        total += strlen(items[i]) + 1;
    char *buf = ck__calloc(1, total);
    if (!buf)
        return NULL;
    for (size_t i = 0; i < n && i < SHOWN; i++) {
        if (i > 0)
            strcat(buf, ",");
        strcat(buf, items[i]);
    }
    if (n > SHOWN)
        snprintf(buf + strlen(buf), total - strlen(buf), " + %zu more...", n - SHOWN);
    json_t *cell = json_string(n ? buf : "<unset>");
    free(buf);
    return cell;
}

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    char *items[SHOWN];
    char numbers[SHOWN][16];
    size_t n = 0, i;
    const json_t *port;
    json_array_foreach(json_object_get(obj, "ports"), i, port)
    {
        if (n < SHOWN) {
            const json_t *number = json_object_get(port, "port");
            const char *name = json_string_value(json_object_get(port, "name"));
            if (number)
                snprintf(numbers[n], sizeof(numbers[n]), "%lld",
                         (long long)json_integer_value(number));
            else
                snprintf(numbers[n], sizeof(numbers[n]), "%s", name ? name : "*");
            items[n] = numbers[n];
        }
        n++;
    }
    cells[COL_PORTS] = list_cell(items, n);
    n = 0;
    const json_t *ep;
    json_array_foreach(json_object_get(obj, "endpoints"), i, ep)
    {
        size_t j;
        const json_t *address;
        json_array_foreach(json_object_get(ep, "addresses"), j, address)
        {
            if (n < SHOWN)
                items[n] = (char *)json_string_value(address);
            n++;
        }
    }
    for (i = 0; i < n && i < SHOWN; i++)
        if (!items[i])
            items[i] = "";
    cells[COL_ENDPOINTS] = list_cell(items, n);
}

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_ADDRESS_TYPE] = {"AddressType", "string", "", "The type of address of the endpoints.", 0,
                          ".addressType", CK_CELL_ABSENT_EMPTY, false},
    [COL_PORTS] = CK__COMPUTED_COLUMN("Ports", "string", "The ports of the endpoints.", 0),
    [COL_ENDPOINTS] = CK__COMPUTED_COLUMN("Endpoints", "string", "The endpoints' addresses.", 0),
    [COL_AGE] = CK__AGE_COLUMN,
};

const struct ck_kind ck__kind_endpointslice = {
    .group = "discovery.k8s.io",
    .version = "v1",
    .kind = "EndpointSlice",
    .list_kind = "EndpointSliceList",
    .resource = "endpointslices",
    .singular = "endpointslice",
    .namespaced = true,
    .schema = "io.k8s.api.discovery.v1.EndpointSlice",
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .validate = validate,
};
