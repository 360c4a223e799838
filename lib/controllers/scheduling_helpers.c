/*
 * scheduling_helpers.c - whether a pod belongs on a node by its tolerations, node
 * selector and required node affinity: the predicates the scheduler's TaintToleration,
 * NodeUnschedulable and NodeAffinity filters, the DaemonSet controller's
 * NodeShouldRunDaemonPod and the node lifecycle controller's taint eviction share.
 *
 * Mirrors Kubernetes 1.32's k8s.io/component-helpers/scheduling/corev1 (helpers.go and
 * nodeaffinity/nodeaffinity.go) and k8s.io/api/core/v1/toleration.go. A node selector
 * requirement is evaluated as labels.Requirement evaluates it: In and NotIn compare
 * strings (NotIn matches a missing label), Gt and Lt need one integer value and an
 * integer label. matchFields knows metadata.name, the one node field Kubernetes
 * extracts. Kubernetes' API validation refuses a malformed requirement (a field other
 * than metadata.name, In without values, Gt without exactly one integer) before a pod
 * is stored; ckube's checks only the operator (docs/differences.md), so here a
 * malformed requirement fails its term, as Kubernetes' lazily reported parse errors
 * do: an unknown operator or field, a Gt or Lt that is not one 64-bit integer, or a
 * label value that is not one.
 *
 * Threading: pure. Tested by tests/controllers/test_scheduling_helpers.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scheduling_helpers.h"

static bool str_eq(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

/* ---- taints and tolerations --------------------------------------------------------- */

bool ck__toleration_tolerates_taint(const json_t *toleration, const json_t *taint)
{
    const char *key = json_string_value(json_object_get(taint, "key"));
    const char *value = json_string_value(json_object_get(taint, "value"));
    const char *effect = json_string_value(json_object_get(taint, "effect"));
    const char *t_effect = json_string_value(json_object_get(toleration, "effect"));
    const char *t_key = json_string_value(json_object_get(toleration, "key"));
    const char *op = json_string_value(json_object_get(toleration, "operator"));
    if (t_effect && *t_effect && !str_eq(t_effect, effect))
        return false;
    if (t_key && *t_key && !str_eq(t_key, key))
        return false;
    if (op && strcmp(op, "Exists") == 0)
        return true;
    return (!op || !*op || strcmp(op, "Equal") == 0) &&
           str_eq(json_string_value(json_object_get(toleration, "value")), value);
}

bool ck__tolerations_tolerate_taint(const json_t *tolerations, const json_t *taint)
{
    size_t i;
    json_t *t;
    json_array_foreach(tolerations, i, t)
    {
        if (ck__toleration_tolerates_taint(t, taint))
            return true;
    }
    return false;
}

static unsigned effect_bit(const char *effect)
{
    if (!effect)
        return 0;
    if (strcmp(effect, "NoSchedule") == 0)
        return CK__TAINT_NO_SCHEDULE;
    if (strcmp(effect, "PreferNoSchedule") == 0)
        return CK__TAINT_PREFER_NO_SCHEDULE;
    if (strcmp(effect, "NoExecute") == 0)
        return CK__TAINT_NO_EXECUTE;
    return 0;
}

const json_t *ck__find_untolerated_taint(const json_t *taints, const json_t *tolerations,
                                         unsigned effects)
{
    size_t i;
    json_t *taint;
    json_array_foreach(taints, i, taint)
    {
        if (!(effect_bit(json_string_value(json_object_get(taint, "effect"))) & effects))
            continue;
        if (!ck__tolerations_tolerate_taint(tolerations, taint))
            return taint;
    }
    return NULL;
}

/* ---- node selectors and affinity ----------------------------------------------------- */

static bool parse_int(const char *s, long long *ret)
{
    char *end = NULL;
    if (!s || !*s)
        return false;
    errno = 0;
    *ret = strtoll(s, &end, 10);
    return *end == '\0' && errno != ERANGE; /* as Go's strconv.ParseInt(s, 10, 64) */
}

/* One NodeSelectorRequirement against a value (NULL: absent). */
static bool requirement_matches(const json_t *req, const char *value)
{
    const char *op = json_string_value(json_object_get(req, "operator"));
    const json_t *values = json_object_get(req, "values");
    if (!op)
        return false;
    if (strcmp(op, "Exists") == 0)
        return value != NULL;
    if (strcmp(op, "DoesNotExist") == 0)
        return value == NULL;
    bool in = false;
    size_t i;
    json_t *v;
    json_array_foreach(values, i, v)
    {
        in = in || (value && str_eq(json_string_value(v), value));
    }
    if (strcmp(op, "In") == 0)
        return in;
    if (strcmp(op, "NotIn") == 0)
        return !in;
    long long have, want;
    if ((strcmp(op, "Gt") == 0 || strcmp(op, "Lt") == 0) && json_array_size(values) == 1 &&
        parse_int(value, &have) && parse_int(json_string_value(json_array_get(values, 0)), &want))
        return op[0] == 'G' ? have > want : have < want;
    return false;
}

/* A NodeSelectorTerm: every expression on labels and every field must match. */
static bool term_matches(const json_t *term, const json_t *labels, const char *node_name)
{
    const json_t *exprs = json_object_get(term, "matchExpressions");
    const json_t *fields = json_object_get(term, "matchFields");
    if (json_array_size(exprs) == 0 && json_array_size(fields) == 0)
        return false;
    size_t i;
    json_t *req;
    json_array_foreach(exprs, i, req)
    {
        const char *key = json_string_value(json_object_get(req, "key"));
        if (!requirement_matches(req, json_string_value(json_object_get(labels, key ? key : ""))))
            return false;
    }
    json_array_foreach(fields, i, req)
    {
        const char *key = json_string_value(json_object_get(req, "key"));
        if (!key || strcmp(key, "metadata.name") != 0 || !requirement_matches(req, node_name))
            return false;
    }
    return true;
}

bool ck__node_selector_terms_match(const json_t *node, const json_t *node_selector)
{
    const json_t *meta = json_object_get(node, "metadata");
    const json_t *labels = json_object_get(meta, "labels");
    const char *name = json_string_value(json_object_get(meta, "name"));
    size_t i;
    json_t *term;
    json_array_foreach(json_object_get(node_selector, "nodeSelectorTerms"), i, term)
    {
        if (term_matches(term, labels, name))
            return true;
    }
    return false;
}

bool ck__required_node_affinity_matches(const json_t *pod, const json_t *node)
{
    const json_t *spec = json_object_get(pod, "spec");
    const json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels");
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)json_object_get(spec, "nodeSelector"), key, value)
    {
        const json_t *have = json_object_get(labels, key);
        if (!have || !str_eq(json_string_value(have), json_string_value(value)))
            return false;
    }
    const json_t *required =
        json_object_get(json_object_get(json_object_get(spec, "affinity"), "nodeAffinity"),
                        "requiredDuringSchedulingIgnoredDuringExecution");
    return !required || ck__node_selector_terms_match(node, required);
}
