/*
 * csidriver.c - the CSIDriver kind (storage.k8s.io/v1): what the cluster
 * knows of a Container Storage Interface driver installed on its nodes.
 *
 * Mirrors Kubernetes' pkg/registry/storage/csidriver/strategy.go,
 * SetDefaults_CSIDriver in pkg/apis/storage/v1/defaults.go, ValidateCSIDriver
 * (Update) in pkg/apis/storage/validation and printCSIDriver in
 * pkg/printers/internalversion: cluster-scoped, a DNS-subdomain name, no
 * status. attachRequired defaults to true, podInfoOnMount, storageCapacity,
 * requiresRepublish and seLinuxMount to false, fsGroupPolicy to
 * ReadWriteOnceWithFSType (the schema), an empty volumeLifecycleModes to
 * [Persistent] (the defaults hook). Validation: those fields are required
 * (reported under Kubernetes' own spelling spec.attachedRequired), the
 * fsGroupPolicy and lifecycle modes are known values, token request
 * audiences are unique and their expirationSeconds between 10 minutes and
 * 2^32 s; attachRequired and volumeLifecycleModes never change. Columns:
 * NAME, ATTACHREQUIRED, PODINFOONMOUNT, STORAGECAPACITY, TOKENREQUESTS,
 * REQUIRESREPUBLISH, MODES, AGE.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_storage.c and tests/e2e/test_kinds.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"

void ck__validate_csi_driver_name(const char *name, const char *path, struct ck_field_errors *errs)
{
    if (!name || !*name) {
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, path, NULL, false, NULL);
        name = "";
    }
    if (strlen(name) > 63)
        ck_field_errors_add(errs, CK_FIELD_TOO_LONG, path, NULL, false,
                            "may not be more than 63 bytes");
    char lower[320];
    snprintf(lower, sizeof(lower), "%s", name);
    for (char *c = lower; *c; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c + 32);
    struct ck_field_errors local = {0};
    ck_validate_dns1123_subdomain(lower, path, &local);
    for (size_t i = 0; i < local.len; i++)
        ck_field_errors_add(errs, CK_FIELD_INVALID, path, name, true, "%s",
                            local.items[i].detail ? local.items[i].detail : "");
    ck_field_errors_release(&local);
}

static int defaults(json_t *obj)
{
    json_t *spec = json_object_get(obj, "spec");
    if (!json_is_object(spec) || json_array_size(json_object_get(spec, "volumeLifecycleModes")))
        return 0;
    return json_object_set_new(spec, "volumeLifecycleModes", json_pack("[s]", "Persistent")) < 0
               ? CK_ENOMEM
               : 0;
}

static void required_bool(const json_t *spec, const char *name, const char *path,
                          struct ck_field_errors *errs)
{
    if (!json_is_boolean(json_object_get(spec, name)))
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, path, NULL, false, NULL);
}

static void validate_token_requests(const json_t *requests, struct ck_field_errors *errs)
{
    size_t i, j;
    const json_t *r;
    char path[96];
    json_array_foreach(requests, i, r)
    {
        const char *audience = ck__str_at(r, "audience");
        bool dup = false;
        for (j = 0; j < i && !dup; j++) {
            const char *before = ck__str_at(json_array_get(requests, j), "audience");
            dup = strcmp(before ? before : "", audience ? audience : "") == 0;
        }
        if (dup) {
            snprintf(path, sizeof(path), "spec.tokenRequests[%zu].audience", i);
            ck_field_errors_add(errs, CK_FIELD_DUPLICATE, path, audience ? audience : "", true,
                                NULL);
            continue;
        }
        const json_t *exp = json_object_get(r, "expirationSeconds");
        if (!json_is_integer(exp))
            continue;
        json_int_t s = json_integer_value(exp);
        char value[32];
        snprintf(value, sizeof(value), "%lld", (long long)s);
        snprintf(path, sizeof(path), "spec.tokenRequests[%zu].expirationSeconds", i);
        if (s < 600)
            ck_field_errors_add(errs, CK_FIELD_INVALID, path, value, false,
                                "may not specify a duration less than 10 minutes");
        if (s > (1LL << 32))
            ck_field_errors_add(errs, CK_FIELD_INVALID, path, value, false,
                                "may not specify a duration larger than 2^32 seconds");
    }
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    const json_t *spec = json_object_get(obj, "spec");
    required_bool(spec, "attachRequired", "spec.attachedRequired", errs);
    required_bool(spec, "podInfoOnMount", "spec.podInfoOnMount", errs);
    required_bool(spec, "storageCapacity", "spec.storageCapacity", errs);
    const char *policy = ck__str_at(spec, "fsGroupPolicy");
    if (policy && strcmp(policy, "File") != 0 && strcmp(policy, "None") != 0 &&
        strcmp(policy, "ReadWriteOnceWithFSType") != 0)
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, "spec.fsGroupPolicy", policy, true,
                            "supported values: \"File\", \"None\", \"ReadWriteOnceWithFSType\"");
    validate_token_requests(json_object_get(spec, "tokenRequests"), errs);
    size_t i;
    const json_t *m;
    json_array_foreach(json_object_get(spec, "volumeLifecycleModes"), i, m)
    {
        const char *mode = json_string_value(m);
        if (!mode || (strcmp(mode, "Persistent") != 0 && strcmp(mode, "Ephemeral") != 0))
            ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, "spec.volumeLifecycleModes",
                                mode ? mode : "", true,
                                "supported values: \"Persistent\", \"Ephemeral\"");
    }
    required_bool(spec, "seLinuxMount", "spec.seLinuxMount", errs);
    if (!old)
        return;
    const json_t *was = json_object_get(json_object_get(old, "spec"), "attachRequired");
    const json_t *now = json_object_get(spec, "attachRequired");
    if (!json_equal(was ? was : json_null(), now ? now : json_null()))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.attachedRequired",
                            json_is_true(now) ? "true" : "false", false, "field is immutable");
    was = json_object_get(json_object_get(old, "spec"), "volumeLifecycleModes");
    now = json_object_get(spec, "volumeLifecycleModes");
    if (!json_equal(was ? was : json_null(), now ? now : json_null())) {
        char *text = now ? json_dumps(now, JSON_COMPACT) : NULL;
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.volumeLifecycleModes",
                            text ? text : "null", false, "field is immutable");
        free(text);
    }
}

enum {
    COL_NAME,
    COL_ATTACH_REQUIRED,
    COL_POD_INFO_ON_MOUNT,
    COL_STORAGE_CAPACITY,
    COL_TOKEN_REQUESTS,
    COL_REQUIRES_REPUBLISH,
    COL_MODES,
    COL_AGE,
};

/* "a,b" of the strings at key of each element (or the element itself with key NULL). */
static json_t *joined(const json_t *list, const char *key, const char *empty)
{
    char buf[512] = "";
    size_t i, used = 0;
    const json_t *e;
    json_array_foreach(list, i, e)
    {
        const char *s = key ? ck__str_at(e, key) : json_string_value(e);
        int n = snprintf(buf + used, sizeof(buf) - used, "%s%s", i ? "," : "", s ? s : "");
        if (n < 0 || (size_t)n >= sizeof(buf) - used)
            break;
        used += (size_t)n;
    }
    return json_string(used || !empty ? buf : empty);
}

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *attach = json_object_get(spec, "attachRequired");
    cells[COL_ATTACH_REQUIRED] = json_boolean(!json_is_false(attach));
    cells[COL_POD_INFO_ON_MOUNT] =
        json_boolean(json_is_true(json_object_get(spec, "podInfoOnMount")));
    cells[COL_STORAGE_CAPACITY] =
        json_boolean(json_is_true(json_object_get(spec, "storageCapacity")));
    const json_t *tokens = json_object_get(spec, "tokenRequests");
    cells[COL_TOKEN_REQUESTS] =
        json_is_array(tokens) ? joined(tokens, "audience", NULL) : json_string("<unset>");
    cells[COL_REQUIRES_REPUBLISH] =
        json_boolean(json_is_true(json_object_get(spec, "requiresRepublish")));
    cells[COL_MODES] = joined(json_object_get(spec, "volumeLifecycleModes"), NULL, "<none>");
}

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_ATTACH_REQUIRED] = CK__COMPUTED_COLUMN(
        "AttachRequired", "boolean",
        "attachRequired indicates this CSI volume driver requires an attach operation (because it "
        "implements the CSI ControllerPublishVolume() method), and that the Kubernetes attach "
        "detach controller should call the attach volume interface which checks the "
        "volumeattachment status and waits until the volume is attached before proceeding to "
        "mounting.",
        0),
    [COL_POD_INFO_ON_MOUNT] = CK__COMPUTED_COLUMN(
        "PodInfoOnMount", "boolean",
        "podInfoOnMount indicates this CSI volume driver requires additional pod information "
        "(like podName, podUID, etc.) during mount operations.",
        0),
    [COL_STORAGE_CAPACITY] = CK__COMPUTED_COLUMN(
        "StorageCapacity", "boolean",
        "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the "
        "storage capacity that the driver deployment will report by creating CSIStorageCapacity "
        "objects with capacity information, if set to true.",
        0),
    [COL_TOKEN_REQUESTS] = CK__COMPUTED_COLUMN(
        "TokenRequests", "string",
        "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting "
        "volume for to do necessary authentication.",
        0),
    [COL_REQUIRES_REPUBLISH] = CK__COMPUTED_COLUMN(
        "RequiresRepublish", "boolean",
        "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically "
        "called to reflect any possible change in the mounted volume.",
        0),
    [COL_MODES] = CK__COMPUTED_COLUMN(
        "Modes", "string",
        "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports.", 0),
    [COL_AGE] = CK__AGE_COLUMN,
};

const struct ck_kind ck__kind_csidriver = {
    .group = "storage.k8s.io",
    .version = "v1",
    .kind = "CSIDriver",
    .list_kind = "CSIDriverList",
    .resource = "csidrivers",
    .singular = "csidriver",
    .namespaced = false,
    .schema = "io.k8s.api.storage.v1.CSIDriver",
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .defaults = defaults,
    .validate = validate,
};
