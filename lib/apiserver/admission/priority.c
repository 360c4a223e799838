/*
 * priority.c - the Priority admission plugin: a pod's priority comes from its
 * PriorityClass, and only one PriorityClass is the global default.
 *
 * Mirrors plugin/pkg/admission/priority/admission.go of Kubernetes 1.32:
 *
 * - Pod create: a pod naming priorityClassName gets that class's value and
 *   preemptionPolicy (403 `no PriorityClass with name x was found`); a pod naming none
 *   gets the global default class's name, value and policy (the lowest value when a
 *   race made several), else priority 0 and PreemptLowerPriority. A priority or policy
 *   the pod already gives must equal the computed one (403 with Kubernetes' words).
 * - Pod update: a priority or policy the request left out is kept from the stored pod
 *   (validation then refuses any change of them).
 * - PriorityClass create or update with globalDefault: 403 `PriorityClass x is already
 *   marked as default. Only one default can exist` when another class is the default.
 *
 * Subresources are not looked at. Classes are read from the store at each request (a
 * range over a handful of objects); kube-apiserver reads its informer's cache.
 *
 * Threading: reads the store only.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"

/* The global default class found so far (scheduling: the lowest value wins). */
struct default_class {
    json_t *class; /* a reference, or NULL */
};

static int find_default(const json_t *pc, void *arg)
{
    struct default_class *d = arg;
    if (!json_is_true(json_object_get(pc, "globalDefault")))
        return 0;
    json_int_t value = json_integer_value(json_object_get(pc, "value"));
    if (!d->class || json_integer_value(json_object_get(d->class, "value")) > value) {
        ck__json_unref(d->class); /* admission's kept lists are shared */
        d->class = ck__json_ref(pc);
    }
    return 0;
}

/* *ret: a reference to the global default PriorityClass, or NULL when there is none. */
static int default_class(struct ck__registry *reg, const struct ck_kind *pc_kind, json_t **ret,
                         struct ck_err *reterr)
{
    struct default_class d = {NULL};
    int r = ck__admission_list(reg, pc_kind, NULL, find_default, &d, reterr);
    if (r < 0) {
        ck__json_unref(d.class);
        return r;
    }
    *ret = d.class;
    return 0;
}

static const char *name_of(const json_t *obj)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
}

/* Pod create: resolves spec.priority, priorityClassName and preemptionPolicy. */
static int admit_pod_create(struct ck__registry *reg, const struct ck__admission_attrs *a,
                            const struct ck_kind *pc_kind, struct ck_err *reterr)
{
    json_t *spec = json_object_get(a->obj, "spec");
    if (!json_is_object(spec))
        return 0; /* validation says what is wrong */
    const char *class_name = json_string_value(json_object_get(spec, "priorityClassName"));
    json_t *pc = NULL;
    int r;
    if (!class_name || !*class_name) {
        r = default_class(reg, pc_kind, &pc, reterr);
        if (r < 0)
            return r;
    } else {
        struct ck_err err = {0};
        r = ck__admission_get(reg, pc_kind, "", class_name, &pc, &err);
        if (r == CK_ENOENT)
            return ck__admission_forbidden(a, reterr, "no PriorityClass with name %s was found",
                                           class_name);
        if (r < 0) {
            int code = r == CK_ENOMEM ? ck_err_no_memory(reterr)
                                      : ck_err_internal(reterr,
                                                        "failed to get PriorityClass with name "
                                                        "%s: %s",
                                                        class_name, err.msg);
            ck_err_release(&err);
            return code;
        }
    }
    json_int_t priority = pc ? json_integer_value(json_object_get(pc, "value")) : 0;
    const char *policy =
        pc ? json_string_value(json_object_get(pc, "preemptionPolicy")) : "PreemptLowerPriority";
    char policy_buf[64] = "";
    if (policy)
        snprintf(policy_buf, sizeof(policy_buf), "%s", policy);
    if (pc && (!class_name || !*class_name) &&
        json_object_set_new(spec, "priorityClassName", json_string(name_of(pc))) < 0)
        r = ck_err_no_memory(reterr);
    ck__json_unref(pc);
    if (r < 0)
        return r;
    const json_t *given = json_object_get(spec, "priority");
    if (given && !json_is_null(given) && json_integer_value(given) != priority)
        return ck__admission_forbidden(
            a, reterr,
            "the integer value of priority (%lld) must not be provided in pod spec; priority "
            "admission controller computed %lld from the given PriorityClass name",
            (long long)json_integer_value(given), (long long)priority);
    if (json_object_set_new(spec, "priority", json_integer(priority)) < 0)
        return ck_err_no_memory(reterr);
    if (!*policy_buf)
        return 0;
    const char *given_policy = json_string_value(json_object_get(spec, "preemptionPolicy"));
    if (given_policy && strcmp(given_policy, policy_buf) != 0)
        return ck__admission_forbidden(
            a, reterr,
            "the string value of PreemptionPolicy (%s) must not be provided in pod spec; "
            "priority admission controller computed %s from the given PriorityClass name",
            given_policy, policy_buf);
    return json_object_set_new(spec, "preemptionPolicy", json_string(policy_buf)) < 0
               ? ck_err_no_memory(reterr)
               : 0;
}

/* Pod update: what the request left out of priority and preemptionPolicy stays. */
static int admit_pod_update(const struct ck__admission_attrs *a, struct ck_err *reterr)
{
    json_t *spec = json_object_get(a->obj, "spec");
    const json_t *old_spec = json_object_get(a->old, "spec");
    static const char *const kept[] = {"priority", "preemptionPolicy"};
    if (!json_is_object(spec))
        return 0;
    for (size_t i = 0; i < 2; i++) {
        const json_t *now = json_object_get(spec, kept[i]);
        const json_t *was = json_object_get(old_spec, kept[i]);
        if ((!now || json_is_null(now)) && was && !json_is_null(was) &&
            json_object_set_new(spec, kept[i], json_deep_copy(was)) < 0)
            return ck_err_no_memory(reterr);
    }
    return 0;
}

static int admit(struct ck__registry *reg, const struct ck__admission_attrs *a,
                 struct ck_err *reterr)
{
    const struct ck_kind *pc_kind = ck_kind_with_role(CK_KIND_ROLE_PRIORITY_CLASS);
    if (!pc_kind || !ck__admission_is_role(a, CK_KIND_ROLE_POD))
        return 0;
    if (a->op == CK__ADMISSION_CREATE)
        return admit_pod_create(reg, a, pc_kind, reterr);
    if (a->op == CK__ADMISSION_UPDATE)
        return admit_pod_update(a, reterr);
    return 0;
}

static int validate(struct ck__registry *reg, const struct ck__admission_attrs *a,
                    struct ck_err *reterr)
{
    const struct ck_kind *pc_kind = ck_kind_with_role(CK_KIND_ROLE_PRIORITY_CLASS);
    if (!pc_kind || a->op == CK__ADMISSION_DELETE ||
        !ck__admission_is_role(a, CK_KIND_ROLE_PRIORITY_CLASS) ||
        !json_is_true(json_object_get(a->obj, "globalDefault")))
        return 0;
    json_t *dpc = NULL;
    int r = default_class(reg, pc_kind, &dpc, reterr);
    if (r < 0 || !dpc)
        return r;
    char other[254];
    snprintf(other, sizeof(other), "%s", name_of(dpc) ? name_of(dpc) : "");
    ck__json_unref(dpc);
    const char *self = name_of(a->obj);
    if (a->op == CK__ADMISSION_CREATE || !self || strcmp(self, other) != 0)
        return ck__admission_forbidden(
            a, reterr, "PriorityClass %s is already marked as default. Only one default can exist",
            other);
    return 0;
}

const struct ck__admission_plugin ck__admission_priority = {
    .name = "Priority", .admit = admit, .validate = validate};
