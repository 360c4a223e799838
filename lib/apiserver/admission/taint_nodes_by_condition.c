/*
 * taint_nodes_by_condition.c - the TaintNodesByCondition admission plugin: a Node is
 * created with the node.kubernetes.io/not-ready:NoSchedule taint, so that nothing is
 * scheduled to it before the node lifecycle controller has seen it Ready (which then
 * takes the taint away).
 *
 * Mirrors plugin/pkg/admission/nodetaint/admission.go of Kubernetes 1.32: creates of
 * nodes only (not their subresources); the taint is appended unless one with the same
 * key and effect is there already (Taint.MatchTaint), whatever its value.
 *
 * Threading: pure; touches only the object it is given.
 */
#include <string.h>

#include "../internal.h"

#define NOT_READY "node.kubernetes.io/not-ready"

static bool field_is(const json_t *obj, const char *field, const char *value)
{
    const char *v = json_string_value(json_object_get(obj, field));
    return v && strcmp(v, value) == 0;
}

static int admit(struct ck__registry *reg, const struct ck__admission_attrs *a,
                 struct ck_err *reterr)
{
    (void)reg;
    if (a->op != CK__ADMISSION_CREATE || !ck__admission_is_role(a, CK_KIND_ROLE_NODE) ||
        !json_is_object(a->obj))
        return 0;
    json_t *spec = json_object_get(a->obj, "spec");
    if (!json_is_object(spec)) {
        if (json_object_set_new(a->obj, "spec", json_object()) < 0)
            return ck_err_no_memory(reterr);
        spec = json_object_get(a->obj, "spec");
    }
    json_t *taints = json_object_get(spec, "taints");
    size_t i;
    json_t *t;
    json_array_foreach(taints, i, t)
    {
        if (field_is(t, "key", NOT_READY) && field_is(t, "effect", "NoSchedule"))
            return 0; /* the taint already exists */
    }
    if (!json_is_array(taints)) {
        if (json_object_set_new(spec, "taints", json_array()) < 0)
            return ck_err_no_memory(reterr);
        taints = json_object_get(spec, "taints");
    }
    if (json_array_append_new(
            taints, json_pack("{s:s, s:s}", "key", NOT_READY, "effect", "NoSchedule")) < 0)
        return ck_err_no_memory(reterr);
    return 0;
}

const struct ck__admission_plugin ck__admission_taint_nodes_by_condition = {
    .name = "TaintNodesByCondition", .admit = admit};
