/*
 * always_pull_images.c - the AlwaysPullImages admission plugin (off by default): every
 * container of a new pod, or of a pod updated with a new image, pulls its image always,
 * so that an image on a node serves only pods whose credentials can pull it.
 *
 * Mirrors plugin/pkg/admission/alwayspullimages/admission.go of Kubernetes 1.32: pods
 * and their ephemeralcontainers subresource, on create and on updates that bring an
 * image the old pod did not use; admit sets imagePullPolicy Always on init, regular and
 * ephemeral containers; validate refuses any container left otherwise (`spec.containers[0].
 * imagePullPolicy: Unsupported value: "IfNotPresent": supported values: "Always"`).
 *
 * Threading: pure; touches only the objects it is given.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"

static const char *const lists[] = {"initContainers", "containers", "ephemeralContainers"};

/* Whether an update's pod uses an image its old version did not. */
static bool has_new_image(const json_t *pod, const json_t *old)
{
    for (size_t l = 0; l < 3; l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(json_object_get(pod, "spec"), lists[l]), i, c)
        {
            const char *image = json_string_value(json_object_get(c, "image"));
            bool seen = false;
            for (size_t m = 0; !seen && m < 3; m++) {
                size_t j;
                json_t *o;
                json_array_foreach(json_object_get(json_object_get(old, "spec"), lists[m]), j, o)
                {
                    const char *old_image = json_string_value(json_object_get(o, "image"));
                    seen = seen || (image && old_image && strcmp(image, old_image) == 0);
                }
            }
            if (!seen)
                return true;
        }
    }
    return false;
}

static bool applies(const struct ck__admission_attrs *a)
{
    bool pods = a->kind && a->kind->role == CK_KIND_ROLE_POD;
    bool sub_ok =
        !a->subresource || !*a->subresource || strcmp(a->subresource, "ephemeralcontainers") == 0;
    if (!pods || !sub_ok || a->op == CK__ADMISSION_DELETE)
        return false;
    return a->op == CK__ADMISSION_CREATE || has_new_image(a->obj, a->old);
}

static int admit(struct ck__registry *reg, const struct ck__admission_attrs *a,
                 struct ck_err *reterr)
{
    (void)reg;
    if (!applies(a))
        return 0;
    for (size_t l = 0; l < 3; l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(json_object_get(a->obj, "spec"), lists[l]), i, c)
        {
            if (json_is_object(c) &&
                json_object_set_new(c, "imagePullPolicy", json_string("Always")) < 0)
                return ck_err_no_memory(reterr);
        }
    }
    return 0;
}

static int validate(struct ck__registry *reg, const struct ck__admission_attrs *a,
                    struct ck_err *reterr)
{
    (void)reg;
    if (!applies(a))
        return 0;
    char why[1024] = "";
    size_t used = 0, n = 0;
    for (size_t l = 0; l < 3; l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(json_object_get(a->obj, "spec"), lists[l]), i, c)
        {
            const char *policy = json_string_value(json_object_get(c, "imagePullPolicy"));
            if (policy && strcmp(policy, "Always") == 0)
                continue;
            int w = snprintf(why + used, sizeof(why) - used,
                             "%sspec.%s[%zu].imagePullPolicy: Unsupported value: \"%s\": "
                             "supported values: \"Always\"",
                             n ? ", " : "", lists[l], i, policy ? policy : "");
            if (w > 0 && (size_t)w < sizeof(why) - used)
                used += (size_t)w;
            n++;
        }
    }
    if (n == 0)
        return 0;
    /* one error per container, aggregated as utilerrors.NewAggregate words several */
    return n == 1 ? ck__admission_forbidden(a, reterr, "%s", why)
                  : ck__admission_forbidden(a, reterr, "[%s]", why);
}

const struct ck__admission_plugin ck__admission_always_pull_images = {
    .name = "AlwaysPullImages", .admit = admit, .validate = validate};
