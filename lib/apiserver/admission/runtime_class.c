/*
 * runtime_class.c - the RuntimeClass admission plugin: a pod naming a RuntimeClass
 * gets the class's overhead and scheduling constraints.
 *
 * Mirrors plugin/pkg/admission/runtimeclass/admission.go of Kubernetes 1.32, on pod
 * creates (not subresources):
 *
 * - a runtimeClassName that names no class is 403 `pod rejected: RuntimeClass "x" not
 *   found`;
 * - admit: the class's overhead.podFixed becomes spec.overhead (a pod that already
 *   gives a different one is refused); the class's scheduling.nodeSelector is merged
 *   into the pod's (a key the pod sets to another value is 403 `conflict:
 *   runtimeClass.scheduling.nodeSelector[k] = a; pod.spec.nodeSelector[k] = b`) and its
 *   tolerations are merged with the pod's as pkg/util/tolerations MergeTolerations does
 *   (a toleration another one covers is dropped);
 * - validate: spec.overhead must equal the class's (`pod rejected: Pod's Overhead
 *   doesn't match RuntimeClass's defined Overhead`), and a pod without such a class may
 *   set none (`pod rejected: Pod Overhead set without corresponding RuntimeClass defined
 *   Overhead`).
 *
 * Quantities compare by value ("1000m" equals "1"), as Semantic.DeepEqual compares them.
 *
 * Threading: reads the store only.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"

/* The pod's RuntimeClass: 0 with *ret a reference, or NULL when the pod names none. */
static int runtime_class_of(struct ck__registry *reg, const struct ck__admission_attrs *a,
                            json_t **ret, struct ck_err *reterr)
{
    *ret = NULL;
    const char *name =
        json_string_value(json_object_get(json_object_get(a->obj, "spec"), "runtimeClassName"));
    const struct ck_kind *kind = ck_kind_lookup("node.k8s.io", "v1", "runtimeclasses");
    if (!name || !kind)
        return 0;
    int r = ck__admission_get(reg, kind, "", name, ret, reterr);
    if (r == CK_ENOENT)
        return ck__admission_forbidden(a, reterr, "pod rejected: RuntimeClass \"%s\" not found",
                                       name);
    return r;
}

static bool quantity_equal(const json_t *x, const json_t *y)
{
    const char *a = json_string_value(x), *b = json_string_value(y);
    int64_t ma, mb;
    if (!a || !b)
        return a == b;
    if (ck_quantity_milli(a, &ma) == 0 && ck_quantity_milli(b, &mb) == 0)
        return ma == mb;
    return strcmp(a, b) == 0;
}

/* Semantic equality of two resource lists (NULL and {} differ, as nil and empty do). */
static bool resources_equal(const json_t *x, const json_t *y)
{
    if (!x || !y || json_is_null(x) || json_is_null(y))
        return (!x || json_is_null(x)) && (!y || json_is_null(y));
    if (json_object_size(x) != json_object_size(y))
        return false;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)x, key, v)
    {
        if (!quantity_equal(v, json_object_get(y, key)))
            return false;
    }
    return true;
}

static const char *str(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "";
}

/* isSuperset: whether toleration ss tolerates everything t does. */
static bool is_superset(const json_t *ss, const json_t *t)
{
    if (json_equal(ss, t))
        return true;
    if (strcmp(str(t, "key"), str(ss, "key")) != 0 &&
        (*str(ss, "key") || strcmp(str(ss, "operator"), "Exists") != 0))
        return false;
    if (strcmp(str(t, "effect"), str(ss, "effect")) != 0 && *str(ss, "effect"))
        return false;
    const json_t *ss_seconds = json_object_get(ss, "tolerationSeconds");
    const json_t *t_seconds = json_object_get(t, "tolerationSeconds");
    if (strcmp(str(ss, "effect"), "NoExecute") == 0 && json_is_integer(ss_seconds) &&
        (!json_is_integer(t_seconds) ||
         json_integer_value(t_seconds) > json_integer_value(ss_seconds)))
        return false;
    const char *op = str(ss, "operator");
    if (!*op || strcmp(op, "Equal") == 0)
        return strcmp(str(t, "operator"), "Equal") == 0 &&
               strcmp(str(t, "value"), str(ss, "value")) == 0;
    return strcmp(op, "Exists") == 0;
}

/* MergeTolerations(first, second): both, without the ones another covers. New reference. */
static json_t *merge_tolerations(const json_t *first, const json_t *second)
{
    json_t *all = json_array(), *merged = json_array();
    if (!all || !merged || (json_is_array(first) && json_array_extend(all, (json_t *)first) < 0) ||
        (json_is_array(second) && json_array_extend(all, (json_t *)second) < 0)) {
        json_decref(all);
        json_decref(merged);
        return NULL;
    }
    size_t n = json_array_size(all);
    for (size_t i = 0; i < n; i++) {
        const json_t *t = json_array_get(all, i);
        bool redundant = false;
        for (size_t j = 0; !redundant && j < json_array_size(merged); j++)
            redundant = is_superset(json_array_get(merged, j), t);
        for (size_t j = i + 1; !redundant && j < n; j++) {
            const json_t *t2 = json_array_get(all, j);
            redundant = !json_equal(t, t2) && is_superset(t2, t);
        }
        if (!redundant && json_array_append(merged, (json_t *)t) < 0) {
            json_decref(merged);
            merged = NULL;
            break;
        }
    }
    json_decref(all);
    return merged;
}

/* setScheduling: the class's node selector and tolerations into the pod's. */
static int set_scheduling(const struct ck__admission_attrs *a, json_t *spec, const json_t *rc,
                          struct ck_err *reterr)
{
    const json_t *scheduling = json_object_get(rc, "scheduling");
    if (!json_is_object(scheduling))
        return 0;
    const json_t *rc_selector = json_object_get(scheduling, "nodeSelector");
    json_t *selector = json_object_get(spec, "nodeSelector");
    const char *key;
    json_t *value;
    if (json_is_object(rc_selector) && !json_is_object(selector)) {
        if (json_object_set_new(spec, "nodeSelector", json_deep_copy(rc_selector)) < 0)
            return ck_err_no_memory(reterr);
    } else if (json_is_object(rc_selector)) {
        json_object_foreach((json_t *)rc_selector, key, value)
        {
            const json_t *pod_value = json_object_get(selector, key);
            if (pod_value && !json_equal(pod_value, value))
                return ck__admission_forbidden(
                    a, reterr,
                    "conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; "
                    "pod.spec.nodeSelector[%s] = %s",
                    key, json_string_value(value) ?: "", key, json_string_value(pod_value) ?: "");
            if (json_object_set(selector, key, value) < 0)
                return ck_err_no_memory(reterr);
        }
    }
    json_t *merged = merge_tolerations(json_object_get(spec, "tolerations"),
                                       json_object_get(scheduling, "tolerations"));
    if (!merged)
        return ck_err_no_memory(reterr);
    if (json_array_size(merged) == 0) {
        json_decref(merged);
        return 0;
    }
    return json_object_set_new(spec, "tolerations", merged) < 0 ? ck_err_no_memory(reterr) : 0;
}

static const char overhead_mismatch[] =
    "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead";

static int admit(struct ck__registry *reg, const struct ck__admission_attrs *a,
                 struct ck_err *reterr)
{
    if (a->op != CK__ADMISSION_CREATE || !ck__admission_is_role(a, CK_KIND_ROLE_POD))
        return 0;
    json_t *rc = NULL;
    int r = runtime_class_of(reg, a, &rc, reterr);
    json_t *spec = json_object_get(a->obj, "spec");
    if (r < 0 || !rc || !json_is_object(spec)) {
        json_decref(rc);
        return r;
    }
    const json_t *fixed = json_object_get(json_object_get(rc, "overhead"), "podFixed");
    const json_t *overhead = json_object_get(spec, "overhead");
    if (fixed && !json_is_null(fixed)) {
        if (overhead && !json_is_null(overhead) && !resources_equal(fixed, overhead))
            r = ck__admission_forbidden(a, reterr, "%s", overhead_mismatch);
        else if (json_object_set_new(spec, "overhead", json_deep_copy(fixed)) < 0)
            r = ck_err_no_memory(reterr);
    }
    if (r == 0)
        r = set_scheduling(a, spec, rc, reterr);
    json_decref(rc);
    return r;
}

static int validate(struct ck__registry *reg, const struct ck__admission_attrs *a,
                    struct ck_err *reterr)
{
    if (a->op != CK__ADMISSION_CREATE || !ck__admission_is_role(a, CK_KIND_ROLE_POD))
        return 0;
    json_t *rc = NULL;
    int r = runtime_class_of(reg, a, &rc, reterr);
    if (r < 0)
        return r;
    const json_t *fixed = json_object_get(json_object_get(rc, "overhead"), "podFixed");
    const json_t *overhead = json_object_get(json_object_get(a->obj, "spec"), "overhead");
    if (fixed && !json_is_null(fixed)) {
        if (!resources_equal(fixed, overhead))
            r = ck__admission_forbidden(a, reterr, "%s", overhead_mismatch);
    } else if (overhead && !json_is_null(overhead)) {
        r = ck__admission_forbidden(
            a, reterr,
            "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead");
    }
    json_decref(rc);
    return r;
}

const struct ck__admission_plugin ck__admission_runtime_class = {
    .name = "RuntimeClass", .admit = admit, .validate = validate};
