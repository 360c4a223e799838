/*
 * podspec.c - the pod spec as pods and the pod templates of Deployments and
 * ReplicaSets share it: computed defaults and validation.
 *
 * Mirrors the parts ckube has of Kubernetes' pkg/apis/core/v1/defaults.go
 * (SetDefaults_Container) and pkg/apis/core/validation (ValidatePodSpec): names,
 * images, and a container's restartPolicy (the SidecarContainers feature, on in
 * 1.32: only Always, only on init containers; the init containers without it may
 * not have probes or lifecycle hooks).
 * Templates get the same defaults as pods, so templates compare equal after
 * defaulting.
 *
 * Also a pod's named port (pkg/api/v1/pod FindPort), which Services' endpoints and
 * NetworkPolicies resolve.
 *
 * Threading: pure functions over the caller's values.
 *
 * Tested by tests/api/test_strategy.c through the pod and workload template
 * cases that reach it.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "ckube/internal/util.h"

/* SetDefaults_Container: Always for :latest or untagged images, else IfNotPresent. */
static const char *default_pull_policy(const char *image)
{
    if (!image)
        return "IfNotPresent";
    if (strchr(image, '@'))
        return "IfNotPresent"; /* pinned by digest */
    const char *slash = strrchr(image, '/');
    const char *colon = strrchr(slash ? slash : image, ':');
    if (!colon || strcmp(colon, ":latest") == 0)
        return "Always";
    return "IfNotPresent";
}

static int default_containers(json_t *containers)
{
    size_t i;
    json_t *c;
    json_array_foreach(containers, i, c)
    {
        if (json_is_object(c) && !json_object_get(c, "imagePullPolicy") &&
            json_object_set_new(c, "imagePullPolicy",
                                json_string(default_pull_policy(
                                    json_string_value(json_object_get(c, "image"))))) < 0)
            return CK_ENOMEM;
    }
    return 0;
}

int ck__pod_spec_default(json_t *spec)
{
    if (!json_is_object(spec))
        return 0;
    if (default_containers(json_object_get(spec, "containers")) < 0 ||
        default_containers(json_object_get(spec, "initContainers")) < 0)
        return CK_ENOMEM;
    return default_containers(json_object_get(spec, "ephemeralContainers"));
}

/*
 * A container's restartPolicy, as validateInitContainers and validateContainers check
 * it: an init container's may be Always only, and one without it has no probes nor
 * lifecycle hooks; a regular container has none.
 */
static void validate_restart_policy(const json_t *c, const char *path, const char *list, size_t i,
                                    struct ck_field_errors *errs)
{
    char field[256];
    const json_t *rp = json_object_get(c, "restartPolicy");
    const char *policy = json_string_value(rp);
    bool init = strcmp(list, "initContainers") == 0;
    snprintf(field, sizeof(field), "%s.%s[%zu].restartPolicy", path, list, i);
    if (!init) {
        if (rp && !json_is_null(rp))
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, field, NULL, false,
                                "may not be set for non-init containers");
        return;
    }
    if (policy && strcmp(policy, "Always") == 0)
        return;
    if (policy)
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, field, policy, true,
                            "supported values: \"Always\"");
    static const char *const forbidden[] = {"lifecycle", "livenessProbe", "readinessProbe",
                                            "startupProbe"};
    for (size_t k = 0; k < sizeof(forbidden) / sizeof(forbidden[0]); k++) {
        const json_t *v = json_object_get(c, forbidden[k]);
        if (!v || json_is_null(v))
            continue;
        snprintf(field, sizeof(field), "%s.%s[%zu].%s", path, list, i, forbidden[k]);
        ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, field, NULL, false,
                            "may not be set for init containers without restartPolicy=Always");
    }
}

/* True when name is the name of one of spec's containers or init containers. */
static bool has_container(const json_t *spec, const char *name)
{
    return ck__json_find(json_object_get(spec, "initContainers"), "name", name) ||
           ck__json_find(json_object_get(spec, "containers"), "name", name);
}

/* A value Go's reflect.Value.IsZero would not call zero: present, not null, not an empty object. */
static bool is_set(const json_t *v)
{
    return v && !json_is_null(v) && !(json_is_object(v) && json_object_size(v) == 0);
}

/*
 * validateEphemeralContainers: names unique across every container, a target
 * that is a regular or init container, none of the fields an ephemeral
 * container may not have (the allow list's false entries), no subPath mounts.
 */
static void validate_ephemeral(const json_t *spec, const char *path, struct ck_field_errors *errs)
{
    static const char *const forbidden[] = {"ports",         "resources",     "resizePolicy",
                                            "restartPolicy", "livenessProbe", "readinessProbe",
                                            "startupProbe",  "lifecycle"};
    char field[256];
    size_t i;
    json_t *ec;
    const json_t *list = json_object_get(spec, "ephemeralContainers");
    json_array_foreach(list, i, ec)
    {
        const char *name = json_string_value(json_object_get(ec, "name"));
        snprintf(field, sizeof(field), "%s.ephemeralContainers[%zu].name", path, i);
        if (!name || !*name) {
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, field, NULL, false, NULL);
        } else {
            ck_validate_dns1123_label(name, field, errs);
            bool duplicate = has_container(spec, name);
            for (size_t j = 0; j < i && !duplicate; j++) {
                const char *o = json_string_value(json_object_get(json_array_get(list, j), "name"));
                duplicate = o && strcmp(o, name) == 0;
            }
            if (duplicate)
                ck_field_errors_add(errs, CK_FIELD_DUPLICATE, field, name, true, NULL);
        }
        const char *image = json_string_value(json_object_get(ec, "image"));
        if (!image || !*image) {
            snprintf(field, sizeof(field), "%s.ephemeralContainers[%zu].image", path, i);
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, field, NULL, false, NULL);
        }
        const char *target = json_string_value(json_object_get(ec, "targetContainerName"));
        if (target && *target && !has_container(spec, target)) {
            snprintf(field, sizeof(field), "%s.ephemeralContainers[%zu].targetContainerName", path,
                     i);
            ck_field_errors_add(errs, CK_FIELD_NOT_FOUND, field, target, true, NULL);
        }
        for (size_t k = 0; k < sizeof(forbidden) / sizeof(forbidden[0]); k++) {
            if (!is_set(json_object_get(ec, forbidden[k])))
                continue;
            snprintf(field, sizeof(field), "%s.ephemeralContainers[%zu].%s", path, i, forbidden[k]);
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, field, NULL, false,
                                "cannot be set for an Ephemeral Container");
        }
        size_t m;
        json_t *mount;
        json_array_foreach(json_object_get(ec, "volumeMounts"), m, mount)
        {
            static const char *const sub_paths[] = {"subPath", "subPathExpr"};
            for (size_t k = 0; k < 2; k++) {
                const char *v = json_string_value(json_object_get(mount, sub_paths[k]));
                if (!v || !*v)
                    continue;
                snprintf(field, sizeof(field), "%s.ephemeralContainers[%zu].volumeMounts[%zu].%s",
                         path, i, m, sub_paths[k]);
                ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, field, NULL, false,
                                    "cannot be set for an Ephemeral Container");
            }
        }
    }
}

void ck__pod_spec_validate(const json_t *spec, const char *path, bool is_template,
                           struct ck_field_errors *errs)
{
    char field[256];
    const json_t *containers = json_object_get(spec, "containers");
    if (json_array_size(containers) == 0) {
        snprintf(field, sizeof(field), "%s.containers", path);
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, field, NULL, false, NULL);
        return;
    }
    static const char *const lists[] = {"initContainers", "containers"};
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(spec, lists[l]), i, c)
        {
            const char *name = json_string_value(json_object_get(c, "name"));
            snprintf(field, sizeof(field), "%s.%s[%zu].name", path, lists[l], i);
            if (name && *name) {
                ck_validate_dns1123_label(name, field, errs);
                /* names are unique across init and regular containers */
                for (size_t m = 0; m <= l; m++) {
                    size_t j;
                    json_t *other;
                    json_array_foreach(json_object_get(spec, lists[m]), j, other)
                    {
                        if (m == l && j >= i)
                            break;
                        const char *o = json_string_value(json_object_get(other, "name"));
                        if (o && strcmp(o, name) == 0)
                            ck_field_errors_add(errs, CK_FIELD_DUPLICATE, field, name, true, NULL);
                    }
                }
            }
            validate_restart_policy(c, path, lists[l], i, errs);
            const char *image = json_string_value(json_object_get(c, "image"));
            if (!is_template && (!image || !*image)) {
                snprintf(field, sizeof(field), "%s.%s[%zu].image", path, lists[l], i);
                ck_field_errors_add(errs, CK_FIELD_REQUIRED, field, NULL, false, NULL);
            }
        }
    }
    if (!is_template)
        validate_ephemeral(spec, path, errs);
}

json_int_t ck_pod_find_port(const json_t *pod, const char *name, const char *protocol)
{
    size_t i, j;
    const json_t *container, *port;
    json_array_foreach(json_object_get(json_object_get(pod, "spec"), "containers"), i, container)
    {
        json_array_foreach(json_object_get(container, "ports"), j, port)
        {
            const char *n = json_string_value(json_object_get(port, "name"));
            const char *p = json_string_value(json_object_get(port, "protocol"));
            if (n && name && strcmp(n, name) == 0 && strcmp(p ? p : "TCP", protocol) == 0)
                return json_integer_value(json_object_get(port, "containerPort"));
        }
    }
    return 0;
}
