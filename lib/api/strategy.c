/*
 * strategy.c - what is particular to each kind on create, update and
 * validation (Kubernetes' pkg/registry/<group>/<kind>/strategy.go and the
 * defaulters in pkg/apis/<group>/v1/defaults.go).
 *
 *   Pod         status reset to Pending with its QoS class on create; most
 *               of spec immutable on update; containers named, unique, with
 *               an image; imagePullPolicy from the image tag.
 *   Namespace   phase Active and the `kubernetes` finalizer on create; the
 *               kubernetes.io/metadata.name label; finalizers change only
 *               through /finalize.
 *   Deployment, ReplicaSet
 *               a selector that is non-empty, matches the template's labels
 *               and never changes; template restartPolicy Always; Recreate
 *               takes no rollingUpdate; RollingUpdate 25%/25% by default.
 * Pod templates in Deployments and ReplicaSets get the same computed
 * defaults as pods, so templates compare equal after defaulting.
 */
#include <stdio.h>
#include <string.h>

#include "ckube/api.h"
#include "internal.h"

static json_t *object_at(json_t *parent, const char *key)
{
    json_t *v = json_object_get(parent, key);
    if (!json_is_object(v)) {
        v = json_object();
        json_object_set_new(parent, key, v);
    }
    return v;
}

/* ---- pod specs (pods and templates) ------------------------------------ */

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

static void default_containers(json_t *containers)
{
    size_t i;
    json_t *c;
    json_array_foreach(containers, i, c)
    {
        if (json_is_object(c) && !json_object_get(c, "imagePullPolicy"))
            json_object_set_new(
                c, "imagePullPolicy",
                json_string(default_pull_policy(json_string_value(json_object_get(c, "image")))));
    }
}

static void default_pod_spec(json_t *spec)
{
    if (!json_is_object(spec))
        return;
    default_containers(json_object_get(spec, "containers"));
    default_containers(json_object_get(spec, "initContainers"));
}

static void validate_pod_spec(const json_t *spec, const char *path, bool is_template,
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
            const char *image = json_string_value(json_object_get(c, "image"));
            if (!is_template && (!image || !*image)) {
                snprintf(field, sizeof(field), "%s.%s[%zu].image", path, lists[l], i);
                ck_field_errors_add(errs, CK_FIELD_REQUIRED, field, NULL, false, NULL);
            }
        }
    }
}

/* ---- Pod ---------------------------------------------------------------- */

/* qos.GetPodQOS, for cpu and memory. */
static const char *pod_qos(const json_t *spec)
{
    bool any = false, guaranteed = true;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(spec, "containers"), i, c)
    {
        const json_t *requests = json_object_get(json_object_get(c, "resources"), "requests");
        const json_t *limits = json_object_get(json_object_get(c, "resources"), "limits");
        static const char *const resources[] = {"cpu", "memory"};
        for (size_t r = 0; r < 2; r++) {
            const json_t *req = json_object_get(requests, resources[r]);
            const json_t *lim = json_object_get(limits, resources[r]);
            if (req || lim)
                any = true;
            if (!lim || (req && !json_equal((json_t *)req, (json_t *)lim)))
                guaranteed = false;
        }
    }
    if (!any)
        return "BestEffort";
    return guaranteed ? "Guaranteed" : "Burstable";
}

void ck__pod_prepare_for_create(json_t *obj)
{
    json_object_set_new(obj, "status",
                        json_pack("{s:s, s:s}", "phase", "Pending", "qosClass",
                                  pod_qos(json_object_get(obj, "spec"))));
}

void ck__pod_defaults(json_t *obj)
{
    default_pod_spec(json_object_get(obj, "spec"));
}

/* A copy of a pod spec without what an update may change. */
static json_t *mutable_masked(const json_t *spec)
{
    json_t *copy = json_deep_copy(spec);
    if (!copy)
        return NULL;
    static const char *const lists[] = {"containers", "initContainers"};
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(copy, lists[l]), i, c)
        {
            json_object_del(c, "image");
        }
    }
    json_object_del(copy, "activeDeadlineSeconds");
    json_object_del(copy, "tolerations");
    json_object_del(copy, "terminationGracePeriodSeconds");
    return copy;
}

void ck__pod_validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    const json_t *spec = json_object_get(obj, "spec");
    validate_pod_spec(spec, "spec", false, errs);
    if (!old)
        return;
    json_t *a = mutable_masked(spec);
    json_t *b = mutable_masked(json_object_get(old, "spec"));
    if (!json_equal(a, b))
        ck_field_errors_add(
            errs, CK_FIELD_FORBIDDEN, "spec", NULL, false,
            "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)");
    json_decref(a);
    json_decref(b);
}

/* ---- Namespace ---------------------------------------------------------- */

void ck__namespace_prepare_for_create(json_t *obj)
{
    json_t *spec = object_at(obj, "spec");
    json_t *finalizers = json_object_get(spec, "finalizers");
    if (!json_is_array(finalizers)) {
        finalizers = json_array();
        json_object_set_new(spec, "finalizers", finalizers);
    }
    bool has = false;
    size_t i;
    json_t *f;
    json_array_foreach(finalizers, i, f)
    {
        has = has || (json_is_string(f) && strcmp(json_string_value(f), "kubernetes") == 0);
    }
    if (!has)
        json_array_append_new(finalizers, json_string("kubernetes"));
    json_object_set_new(obj, "status", json_pack("{s:s}", "phase", "Active"));
}

void ck__namespace_prepare_for_update(json_t *obj, const json_t *old)
{
    /* spec.finalizers change only through the finalize subresource */
    json_t *spec = object_at(obj, "spec");
    json_t *old_finalizers = json_object_get(json_object_get(old, "spec"), "finalizers");
    if (old_finalizers)
        json_object_set_new(spec, "finalizers", json_deep_copy(old_finalizers));
    else
        json_object_del(spec, "finalizers");
}

void ck__namespace_defaults(json_t *obj)
{
    json_t *meta = object_at(obj, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    if (name)
        json_object_set_new(object_at(meta, "labels"), "kubernetes.io/metadata.name",
                            json_string(name));
}

/* ---- Deployment and ReplicaSet ------------------------------------------ */

/* The server owns a workload's status: a create starts from none, as Go's zero
 * value serialises it (ReplicaSetStatus.replicas has no omitempty). */
void ck__deployment_prepare_for_create(json_t *obj)
{
    json_object_set_new(obj, "status", json_object());
}

void ck__replicaset_prepare_for_create(json_t *obj)
{
    json_object_set_new(obj, "status", json_pack("{s:i}", "replicas", 0));
}

void ck__workload_defaults(json_t *obj)
{
    default_pod_spec(
        json_object_get(json_object_get(json_object_get(obj, "spec"), "template"), "spec"));
}

void ck__deployment_defaults(json_t *obj)
{
    ck__workload_defaults(obj);
    json_t *spec = json_object_get(obj, "spec");
    if (!json_is_object(spec))
        return;
    json_t *strategy = object_at(spec, "strategy");
    const char *type = json_string_value(json_object_get(strategy, "type"));
    if (!type) {
        type = "RollingUpdate";
        json_object_set_new(strategy, "type", json_string(type));
    }
    if (strcmp(type, "RollingUpdate") == 0) {
        json_t *rolling = object_at(strategy, "rollingUpdate");
        if (!json_object_get(rolling, "maxUnavailable"))
            json_object_set_new(rolling, "maxUnavailable", json_string("25%"));
        if (!json_object_get(rolling, "maxSurge"))
            json_object_set_new(rolling, "maxSurge", json_string("25%"));
    }
}

void ck__workload_validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *selector = json_object_get(spec, "selector");
    const json_t *template_labels = ck__json_path(obj, "spec.template.metadata.labels");
    struct ck_label_selector *s = NULL;
    struct ck_err err = {0};
    if (!selector) {
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.selector", NULL, false, NULL);
    } else if (ck_label_selector_from_object(selector, &s, &err) < 0) {
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.selector", NULL, false, "%s", err.msg);
    } else if (ck_label_selector_is_empty(s)) {
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.selector", NULL, false,
                            "empty selector is invalid for deployment");
    } else if (!ck_label_selector_matches(s, template_labels)) {
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.template.metadata.labels", NULL, false,
                            "`selector` does not match template `labels`");
    }
    ck_label_selector_free(s);
    if (old &&
        !json_equal((json_t *)selector, json_object_get(json_object_get(old, "spec"), "selector")))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.selector", NULL, false,
                            "field is immutable");
    const json_t *pod_spec = ck__json_path(obj, "spec.template.spec");
    validate_pod_spec(pod_spec, "spec.template.spec", true, errs);
    const char *restart = json_string_value(json_object_get(pod_spec, "restartPolicy"));
    if (restart && strcmp(restart, "Always") != 0)
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, "spec.template.spec.restartPolicy",
                            restart, true, "supported values: \"Always\"");
}

void ck__deployment_validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    ck__workload_validate(obj, old, errs);
    const json_t *strategy = ck__json_path(obj, "spec.strategy");
    const char *type = json_string_value(json_object_get(strategy, "type"));
    if (type && strcmp(type, "Recreate") == 0 && json_object_get(strategy, "rollingUpdate"))
        ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "spec.strategy.rollingUpdate", NULL, false,
                            "may not be specified when strategy `type` is 'Recreate'");
}
