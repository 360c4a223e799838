/*
 * default_toleration_seconds.c - the DefaultTolerationSeconds admission plugin: a pod
 * that does not tolerate node.kubernetes.io/not-ready and node.kubernetes.io/unreachable
 * with NoExecute gets tolerations of both for 300 s, so that the node lifecycle
 * controller evicts it that long after its node is lost.
 *
 * Mirrors plugin/pkg/admission/defaulttolerationseconds/admission.go of Kubernetes
 * 1.32: pods only (not their subresources), on create and update, each toleration
 * added only when no existing one tolerates the taint (v1helper ToleratesTaint); the
 * 300 s are kube-apiserver's defaults of --default-not-ready-toleration-seconds and
 * --default-unreachable-toleration-seconds.
 *
 * Threading: pure; touches only the object it is given.
 */
#include <string.h>

#include "../internal.h"

#define DEFAULT_TOLERATION_SECONDS 300

/* v1helper.Toleration.ToleratesTaint, for a taint with key and effect and no value. */
static bool tolerates(const json_t *toleration, const char *key, const char *effect)
{
    const char *t_effect = json_string_value(json_object_get(toleration, "effect"));
    const char *t_key = json_string_value(json_object_get(toleration, "key"));
    const char *op = json_string_value(json_object_get(toleration, "operator"));
    const char *value = json_string_value(json_object_get(toleration, "value"));
    bool exists = op && strcmp(op, "Exists") == 0;
    if (t_effect && *t_effect && strcmp(t_effect, effect) != 0)
        return false;
    if (t_key && *t_key && strcmp(t_key, key) != 0)
        return false;
    if ((!t_key || !*t_key) && !exists)
        return false;
    return exists || !value || !*value;
}

static int add_default_tolerations(json_t *spec)
{
    static const char *const keys[] = {"node.kubernetes.io/not-ready",
                                       "node.kubernetes.io/unreachable"};
    if (!json_is_object(spec))
        return 0;
    json_t *list = json_object_get(spec, "tolerations");
    for (size_t k = 0; k < 2; k++) {
        bool tolerated = false;
        size_t i;
        json_t *t;
        json_array_foreach(list, i, t)
        {
            tolerated = tolerated || tolerates(t, keys[k], "NoExecute");
        }
        if (tolerated)
            continue;
        if (!json_is_array(list)) {
            if (json_object_set_new(spec, "tolerations", json_array()) < 0)
                return CK_ENOMEM;
            list = json_object_get(spec, "tolerations");
        }
        if (json_array_append_new(list,
                                  json_pack("{s:s, s:s, s:s, s:I}", "key", keys[k], "operator",
                                            "Exists", "effect", "NoExecute", "tolerationSeconds",
                                            (json_int_t)DEFAULT_TOLERATION_SECONDS)) < 0)
            return CK_ENOMEM;
    }
    return 0;
}

static int admit(struct ck__registry *reg, const struct ck__admission_attrs *a,
                 struct ck_err *reterr)
{
    (void)reg;
    if (a->op == CK__ADMISSION_DELETE || !ck__admission_is_role(a, CK_KIND_ROLE_POD))
        return 0;
    return add_default_tolerations(json_object_get(a->obj, "spec")) < 0 ? ck_err_no_memory(reterr)
                                                                        : 0;
}

const struct ck__admission_plugin ck__admission_default_toleration_seconds = {
    .name = "DefaultTolerationSeconds", .admit = admit};
