/*
 * default_ingress_class.c - the DefaultIngressClass admission plugin: an Ingress
 * created without a class gets the cluster's default IngressClass.
 *
 * Mirrors plugin/pkg/admission/network/defaultingressclass/admission.go of Kubernetes
 * 1.32: on create of an Ingress (networking.k8s.io; not its status) with neither
 * spec.ingressClassName nor the kubernetes.io/ingress.class annotation, the IngressClass
 * annotated ingressclass.kubernetes.io/is-default-class: "true" becomes its class; none
 * leaves it unset; of several, the newest (creationTimestamp, then the smallest name).
 *
 * Threading: reads the store only.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"

#define DEFAULT_ANNOTATION "ingressclass.kubernetes.io/is-default-class"
#define CLASS_ANNOTATION   "kubernetes.io/ingress.class"

/* The newest default class seen so far. */
struct newest {
    char name[254];   /* "": none yet */
    char created[32]; /* its creationTimestamp, RFC 3339 in UTC: ordered as text */
};

static int newest_default(const json_t *class, void *arg)
{
    struct newest *d = arg;
    const json_t *meta = json_object_get(class, "metadata");
    const char *v = json_string_value(
        json_object_get(json_object_get(meta, "annotations"), DEFAULT_ANNOTATION));
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *created = json_string_value(json_object_get(meta, "creationTimestamp"));
    if (!v || strcmp(v, "true") != 0 || !name)
        return 0;
    if (!created)
        created = "";
    int newer = strcmp(created, d->created);
    if (!*d->name || newer > 0 || (newer == 0 && strcmp(name, d->name) < 0)) {
        snprintf(d->name, sizeof(d->name), "%s", name);
        snprintf(d->created, sizeof(d->created), "%s", created);
    }
    return 0;
}

static int admit(struct ck__registry *reg, const struct ck__admission_attrs *a,
                 struct ck_err *reterr)
{
    if (a->op != CK__ADMISSION_CREATE || !ck__admission_is(a, "networking.k8s.io", "ingresses"))
        return 0;
    const struct ck_kind *class_kind = ck_kind_lookup("networking.k8s.io", "v1", "ingressclasses");
    json_t *spec = json_object_get(a->obj, "spec");
    const json_t *given = json_object_get(spec, "ingressClassName");
    const json_t *annotations = json_object_get(json_object_get(a->obj, "metadata"), "annotations");
    if (!class_kind || (given && !json_is_null(given)) ||
        json_object_get(annotations, CLASS_ANNOTATION))
        return 0;
    struct newest d = {"", ""};
    int r = ck__admission_list(reg, class_kind, NULL, newest_default, &d, reterr);
    if (r < 0 || !*d.name)
        return r;
    if (!json_is_object(spec)) {
        if (json_object_set_new(a->obj, "spec", json_object()) < 0)
            return ck_err_no_memory(reterr);
        spec = json_object_get(a->obj, "spec");
    }
    return json_object_set_new(spec, "ingressClassName", json_string(d.name)) < 0
               ? ck_err_no_memory(reterr)
               : 0;
}

const struct ck__admission_plugin ck__admission_default_ingress_class = {"DefaultIngressClass",
                                                                         admit, NULL};
