/*
 * deny_service_external_ips.c - the DenyServiceExternalIPs admission plugin (off by
 * default): no Service gains an external IP.
 *
 * Mirrors plugin/pkg/admission/network/denyserviceexternalips/admission.go of Kubernetes
 * 1.32: on create and update of a Service (not its status), every spec.externalIPs entry
 * must already be in the stored Service, else 403 `services "x" is forbidden: Use of
 * external IPs is denied by admission control`; removing them is always allowed.
 *
 * Threading: pure; reads only the objects it is given.
 */
#include <string.h>

#include "../internal.h"

static bool listed(const json_t *ips, const char *ip)
{
    size_t i;
    json_t *v;
    json_array_foreach(ips, i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), ip) == 0)
            return true;
    }
    return false;
}

static int validate(struct ck__registry *reg, const struct ck__admission_attrs *a,
                    struct ck_err *reterr)
{
    (void)reg;
    if (a->op == CK__ADMISSION_DELETE || !ck__admission_is(a, "", "services"))
        return 0;
    const json_t *ips = json_object_get(json_object_get(a->obj, "spec"), "externalIPs");
    const json_t *old_ips = json_object_get(json_object_get(a->old, "spec"), "externalIPs");
    size_t i;
    json_t *ip;
    json_array_foreach(ips, i, ip)
    {
        if (!a->old || !json_is_string(ip) || !listed(old_ips, json_string_value(ip)))
            return ck__admission_forbidden(a, reterr,
                                           "Use of external IPs is denied by admission control");
    }
    return 0;
}

const struct ck__admission_plugin ck__admission_deny_service_external_ips = {
    .name = "DenyServiceExternalIPs", .validate = validate};
