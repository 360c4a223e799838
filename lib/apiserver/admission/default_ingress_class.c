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
    static const char *const marks[] = {DEFAULT_ANNOTATION, NULL};
    char name[254];
    int r = ck__admission_newest_default(reg, class_kind, marks, name, sizeof(name), reterr);
    if (r < 0 || !*name)
        return r;
    if (!json_is_object(spec)) {
        if (json_object_set_new(a->obj, "spec", json_object()) < 0)
            return ck_err_no_memory(reterr);
        spec = json_object_get(a->obj, "spec");
    }
    return json_object_set_new(spec, "ingressClassName", json_string(name)) < 0
               ? ck_err_no_memory(reterr)
               : 0;
}

const struct ck__admission_plugin ck__admission_default_ingress_class = {
    .name = "DefaultIngressClass", .admit = admit};
