/*
 * horizontalpodautoscaler.c - the HorizontalPodAutoscaler kind in autoscaling/v2,
 * its storage version, and what autoscaling/v1 (horizontalpodautoscalerv1.c)
 * shares with it: validation, the printer and the conversion between the two.
 *
 * Mirrors Kubernetes 1.32's pkg/apis/autoscaling/v2/defaults.go (minReplicas 1, a
 * CPU utilization target of 80% when no metric is given, a behavior's unset rules
 * filled from the defaults: scale up by max(4 pods, 100%) per 15 s without a
 * window, scale down by 100% per 15 s with the controller's window),
 * pkg/apis/autoscaling/validation (the spec's bounds, scaleTargetRef, metric
 * sources and targets, behavior rules, and the status counts, in its words),
 * pkg/apis/autoscaling/v1/conversion.go (v1's targetCPUUtilizationPercentage is
 * v2's CPU Utilization metric; what v1 cannot say travels in the annotations
 * autoscaling.alpha.kubernetes.io/metrics, current-metrics, conditions and
 * behavior, in v1's metric shapes) and pkg/printers/internalversion's HPA printer
 * (NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE).
 *
 * The conversion works on JSON trees in place: ck__hpa_v2_to_v1() and
 * ck__hpa_v1_to_v2(). v1 is validated and printed through its v2 form, as
 * Kubernetes validates and prints the internal version.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_horizontalpodautoscaler.c and the e2e kubectl test of
 * autoscaling (e2e.hpa).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "ckube/internal/util.h"

#define ANN_METRICS         "autoscaling.alpha.kubernetes.io/metrics"
#define ANN_CURRENT_METRICS "autoscaling.alpha.kubernetes.io/current-metrics"
#define ANN_CONDITIONS      "autoscaling.alpha.kubernetes.io/conditions"
#define ANN_BEHAVIOR        "autoscaling.alpha.kubernetes.io/behavior"

/* A field path into buf; a path too long for it is cut short (its error still names it). */
static void field(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void field(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
}
#define FIELD(buf, ...) field(buf, sizeof(buf), __VA_ARGS__)

/* autoscaling.DefaultCPUUtilization */
#define DEFAULT_CPU_UTILIZATION 80

enum {
    COL_NAME,
    COL_REFERENCE,
    COL_TARGETS,
    COL_MINPODS,
    COL_MAXPODS,
    COL_REPLICAS,
    COL_AGE,
};

/* ---- defaults ------------------------------------------------------------- */

static int set_int_if_absent(json_t *o, const char *key, long long v)
{
    return json_object_get(o, key) ? 0 : json_object_set_new(o, key, json_integer(v));
}

static json_t *policy(const char *type, int value, int period)
{
    return json_pack("{s:s,s:i,s:i}", "type", type, "value", value, "periodSeconds", period);
}

/* GenerateHPAScaleUpRules / GenerateHPAScaleDownRules: the unset members of rules. */
static int default_rules(json_t *behavior, const char *key, bool up)
{
    json_t *rules = ck__object_at(behavior, key);
    if (!rules)
        return CK_ENOMEM;
    int failed = 0;
    if (up)
        failed |= set_int_if_absent(rules, "stabilizationWindowSeconds", 0);
    if (!json_object_get(rules, "selectPolicy"))
        failed |= json_object_set_new(rules, "selectPolicy", json_string("Max"));
    if (!json_object_get(rules, "policies")) {
        json_t *list = up ? json_pack("[o,o]", policy("Pods", 4, 15), policy("Percent", 100, 15))
                          : json_pack("[o]", policy("Percent", 100, 15));
        failed |= json_object_set_new(rules, "policies", list);
    }
    return failed ? CK_ENOMEM : 0;
}

static json_t *cpu_metric(long long utilization)
{
    return json_pack("{s:s,s:{s:s,s:{s:s,s:I}}}", "type", "Resource", "resource", "name", "cpu",
                     "target", "type", "Utilization", "averageUtilization",
                     (json_int_t)utilization);
}

static int defaults(json_t *obj)
{
    json_t *spec = json_object_get(obj, "spec");
    if (!json_is_object(spec))
        return 0;
    if (set_int_if_absent(spec, "minReplicas", 1) < 0)
        return CK_ENOMEM;
    if (json_array_size(json_object_get(spec, "metrics")) == 0 &&
        json_object_set_new(spec, "metrics",
                            json_pack("[o]", cpu_metric(DEFAULT_CPU_UTILIZATION))) < 0)
        return CK_ENOMEM;
    json_t *behavior = json_object_get(spec, "behavior");
    if (json_is_object(behavior) && (default_rules(behavior, "scaleUp", true) < 0 ||
                                     default_rules(behavior, "scaleDown", false) < 0))
        return CK_ENOMEM;
    return 0;
}

static int prepare_for_create(json_t *obj)
{
    return json_object_set_new(obj, "status", json_object()) < 0 ? CK_ENOMEM : 0;
}

/* ---- validation ----------------------------------------------------------- */

static void add_int_error(struct ck_field_errors *errs, const char *path, long long v,
                          const char *msg)
{
    char text[32];
    snprintf(text, sizeof(text), "%lld", v);
    ck_field_errors_add(errs, CK_FIELD_INVALID, path, text, false, "%s", msg);
}

static bool one_of(const char *v, const char *const *set)
{
    for (; *set; set++)
        if (strcmp(v, *set) == 0)
            return true;
    return false;
}

/* ValidateCrossVersionObjectReference */
static void validate_ref(const json_t *ref, const char *path, struct ck_field_errors *errs)
{
    static const char *const members[] = {"kind", "name"};
    char f[160];
    for (size_t i = 0; i < 2; i++) {
        const char *v = ck__str_at(ref, members[i]);
        FIELD(f, "%s.%s", path, members[i]);
        if (!v || !*v)
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false, NULL);
        else
            ck__validate_path_segment(v, f, errs);
    }
}

static bool quantity_positive(const json_t *q)
{
    int64_t milli = 0;
    return json_is_string(q) && ck_quantity_milli(json_string_value(q), &milli) == 0 && milli > 0;
}

/* validateMetricTarget */
static void validate_target(const json_t *target, const char *path, struct ck_field_errors *errs)
{
    static const char *const types[] = {"AverageValue", "Utilization", "Value", NULL};
    char f[200];
    const char *type = ck__str_at(target, "type");
    FIELD(f, "%s.type", path);
    if (!type || !*type)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false,
                            "must specify a metric target type");
    else if (!one_of(type, types))
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, f, type, true,
                            "supported values: \"AverageValue\", \"Utilization\", \"Value\"");
    static const char *const quantities[] = {"value", "averageValue"};
    for (size_t i = 0; i < 2; i++) {
        const json_t *q = json_object_get(target, quantities[i]);
        FIELD(f, "%s.%s", path, quantities[i]);
        if (q && !quantity_positive(q))
            ck_field_errors_add(errs, CK_FIELD_INVALID, f,
                                json_is_string(q) ? json_string_value(q) : NULL, false,
                                "must be positive");
    }
    const json_t *u = json_object_get(target, "averageUtilization");
    FIELD(f, "%s.averageUtilization", path);
    if (json_is_integer(u) && json_integer_value(u) < 1)
        add_int_error(errs, f, json_integer_value(u), "must be greater than 0");
}

/* validateResourceSource / validateContainerResourceSource */
static void validate_resource_source(const json_t *src, const char *path, bool container,
                                     struct ck_field_errors *errs)
{
    char f[200];
    const char *name = ck__str_at(src, "name");
    FIELD(f, "%s.name", path);
    if (!name || !*name)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false,
                            "must specify a resource name");
    if (container) {
        const char *c = ck__str_at(src, "container");
        FIELD(f, "%s.container", path);
        if (!c || !*c)
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false,
                                "must specify a container");
    }
    const json_t *target = json_object_get(src, "target");
    FIELD(f, "%s.target", path);
    validate_target(target, f, errs);
    bool has_u = json_object_get(target, "averageUtilization") != NULL;
    bool has_v = json_object_get(target, "averageValue") != NULL;
    if (!has_u && !has_v) {
        FIELD(f, "%s.target.averageUtilization", path);
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false,
                            "must set either a target raw value or a target utilization");
    } else if (has_u && has_v) {
        FIELD(f, "%s.target.averageValue", path);
        ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, f, NULL, false,
                            "may not set both a target raw value and a target utilization");
    }
}

/* validatePodsSource / validateExternalSource / validateObjectSource: a named metric. */
static void validate_named_source(const json_t *src, const char *path, const char *kind,
                                  struct ck_field_errors *errs)
{
    char f[200];
    const char *name = ck__str_at(src, "metric.name");
    FIELD(f, "%s.metric.name", path);
    if (!name || !*name)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false, "must specify a metric name");
    if (strcmp(kind, "object") == 0) {
        FIELD(f, "%s.describedObject", path);
        validate_ref(json_object_get(src, "describedObject"), f, errs);
    }
    const json_t *target = json_object_get(src, "target");
    FIELD(f, "%s.target", path);
    validate_target(target, f, errs);
    bool has_v = json_object_get(target, "value") != NULL;
    bool has_av = json_object_get(target, "averageValue") != NULL;
    if (strcmp(kind, "pods") == 0) {
        if (!has_av) {
            FIELD(f, "%s.target.averageValue", path);
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false,
                                "must specify a positive target averageValue");
        }
    } else if (!has_v && !has_av) {
        FIELD(f, "%s.target.value", path);
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false,
                            "must set either a target value or averageValue");
    }
}

static const char *const source_members[] = {"object", "pods", "resource", "containerResource",
                                             "external"};
static const char *const source_types[] = {"Object", "Pods", "Resource", "ContainerResource",
                                           "External"};

/* validateMetricSpec */
static void validate_metric(const json_t *m, const char *path, struct ck_field_errors *errs)
{
    char f[200];
    const char *type = ck__str_at(m, "type");
    FIELD(f, "%s.type", path);
    int expected = -1;
    if (!type || !*type)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false,
                            "must specify a metric source type");
    for (int i = 0; type && i < 5; i++)
        if (strcmp(type, source_types[i]) == 0)
            expected = i;
    if (type && *type && expected < 0)
        ck_field_errors_add(
            errs, CK_FIELD_NOT_SUPPORTED, f, type, true,
            "supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"");
    int present = 0;
    for (int i = 0; i < 5; i++)
        present += json_object_get(m, source_members[i]) != NULL;
    if (expected >= 0) {
        const json_t *src = json_object_get(m, source_members[expected]);
        FIELD(f, "%s.%s", path, source_members[expected]);
        if (!src)
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false,
                                "must populate information for the given metric source");
        else if (expected == 2 || expected == 3)
            validate_resource_source(src, f, expected == 3, errs);
        else
            validate_named_source(src, f, source_members[expected], errs);
    }
    if (present != 1)
        for (int i = 0; i < 5; i++) {
            if (i == expected || !json_object_get(m, source_members[i]))
                continue;
            FIELD(f, "%s.%s", path, source_members[i]);
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, f, NULL, false,
                                "must populate the given metric source only");
        }
}

/* validateScalingRules */
static void validate_rules(const json_t *rules, const char *path, struct ck_field_errors *errs)
{
    char f[200];
    const json_t *w = json_object_get(rules, "stabilizationWindowSeconds");
    FIELD(f, "%s.stabilizationWindowSeconds", path);
    if (json_is_integer(w) && json_integer_value(w) < 0)
        add_int_error(errs, f, json_integer_value(w), "must be greater than or equal to zero");
    else if (json_is_integer(w) && json_integer_value(w) > 3600)
        add_int_error(errs, f, json_integer_value(w), "must be less than or equal to 3600");
    static const char *const selects[] = {"Disabled", "Max", "Min", NULL};
    const char *sel = ck__str_at(rules, "selectPolicy");
    FIELD(f, "%s.selectPolicy", path);
    if (sel && !one_of(sel, selects))
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, f, sel, true,
                            "supported values: \"Disabled\", \"Max\", \"Min\"");
    const json_t *policies = json_object_get(rules, "policies");
    FIELD(f, "%s.policies", path);
    if (json_array_size(policies) == 0)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false,
                            "must specify at least one Policy");
    size_t i;
    const json_t *p;
    json_array_foreach(policies, i, p)
    {
        static const char *const types[] = {"Percent", "Pods", NULL};
        const char *type = ck__str_at(p, "type");
        FIELD(f, "%s.policies[%zu].type", path, i);
        if (!type || !one_of(type, types))
            ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, f, type ? type : "", true,
                                "supported values: \"Percent\", \"Pods\"");
        long long value = ck__int_at(p, "value"), period = ck__int_at(p, "periodSeconds");
        FIELD(f, "%s.policies[%zu].value", path, i);
        if (value <= 0)
            add_int_error(errs, f, value, "must be greater than zero");
        FIELD(f, "%s.policies[%zu].periodSeconds", path, i);
        if (period <= 0)
            add_int_error(errs, f, period, "must be greater than zero");
        else if (period > 1800)
            add_int_error(errs, f, period, "must be less than or equal to 1800");
    }
}

void ck__hpa_validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    (void)old;
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *min = json_object_get(spec, "minReplicas");
    long long max = ck__int_at(spec, "maxReplicas");
    if (json_is_integer(min) && json_integer_value(min) < 1)
        add_int_error(errs, "spec.minReplicas", json_integer_value(min),
                      "must be greater than or equal to 1");
    if (max < 1)
        add_int_error(errs, "spec.maxReplicas", max, "must be greater than 0");
    if (json_is_integer(min) && max < json_integer_value(min))
        add_int_error(errs, "spec.maxReplicas", max,
                      "must be greater than or equal to `minReplicas`");
    validate_ref(json_object_get(spec, "scaleTargetRef"), "spec.scaleTargetRef", errs);
    size_t i;
    const json_t *m;
    char f[64];
    json_array_foreach(json_object_get(spec, "metrics"), i, m)
    {
        FIELD(f, "spec.metrics[%zu]", i);
        validate_metric(m, f, errs);
    }
    const json_t *behavior = json_object_get(spec, "behavior");
    if (json_object_get(behavior, "scaleUp"))
        validate_rules(json_object_get(behavior, "scaleUp"), "spec.behavior.scaleUp", errs);
    if (json_object_get(behavior, "scaleDown"))
        validate_rules(json_object_get(behavior, "scaleDown"), "spec.behavior.scaleDown", errs);
    /* ValidateHorizontalPodAutoscalerStatusUpdate */
    const json_t *status = json_object_get(obj, "status");
    static const char *const counts[] = {"currentReplicas", "desiredReplicas"};
    for (size_t k = 0; k < 2; k++) {
        long long v = ck__int_at(status, counts[k]);
        FIELD(f, "status.%s", counts[k]);
        if (v < 0)
            add_int_error(errs, f, v, "must be greater than or equal to 0");
    }
}

/* ---- printer -------------------------------------------------------------- */

static const char *str_or(const json_t *o, const char *path, const char *dflt)
{
    const char *s = ck__str_at(o, path);
    return s ? s : dflt;
}

/* formatHPAMetrics: one metric's "current/target". */
static void format_metric(const json_t *spec, const json_t *status, char *buf, size_t size)
{
    const char *type = str_or(spec, "type", "");
    if (strcmp(type, "Resource") == 0 || strcmp(type, "ContainerResource") == 0) {
        const char *member = strcmp(type, "Resource") == 0 ? "resource" : "containerResource";
        const json_t *src = json_object_get(spec, member);
        const json_t *cur = json_object_get(json_object_get(status, member), "current");
        const char *name = str_or(src, "name", "");
        const json_t *target = json_object_get(src, "target");
        if (json_object_get(target, "averageValue")) {
            snprintf(buf, size, "%s: %s/%s", name,
                     cur ? str_or(cur, "averageValue", "0") : "<unknown>",
                     str_or(target, "averageValue", ""));
            return;
        }
        char c[32] = "<unknown>", t[32] = "<auto>";
        if (json_is_integer(json_object_get(cur, "averageUtilization")))
            snprintf(c, sizeof(c), "%lld%%", ck__int_at(cur, "averageUtilization"));
        if (json_is_integer(json_object_get(target, "averageUtilization")))
            snprintf(t, sizeof(t), "%lld%%", ck__int_at(target, "averageUtilization"));
        snprintf(buf, size, "%s: %s/%s", name, c, t);
    } else if (strcmp(type, "Pods") == 0) {
        const json_t *cur = ck__json_path(status, "pods.current");
        snprintf(buf, size, "%s/%s", cur ? str_or(cur, "averageValue", "0") : "<unknown>",
                 str_or(spec, "pods.target.averageValue", "0"));
    } else if (strcmp(type, "Object") == 0 || strcmp(type, "External") == 0) {
        const char *member = strcmp(type, "Object") == 0 ? "object" : "external";
        const json_t *src = json_object_get(spec, member);
        const json_t *cur = json_object_get(json_object_get(status, member), "current");
        if (ck__str_at(src, "target.averageValue"))
            snprintf(buf, size, "%s/%s (avg)", str_or(cur, "averageValue", "<unknown>"),
                     str_or(src, "target.averageValue", ""));
        else
            snprintf(buf, size, "%s/%s", cur ? str_or(cur, "value", "0") : "<unknown>",
                     str_or(src, "target.value", "0"));
    } else {
        snprintf(buf, size, "<unknown type>");
    }
}

static json_t *targets_cell(const json_t *obj)
{
    const json_t *specs = ck__json_path(obj, "spec.metrics");
    const json_t *statuses = ck__json_path(obj, "status.currentMetrics");
    size_t n = json_array_size(specs);
    if (n == 0)
        return json_string("<none>");
    char out[512] = "", one[160];
    size_t used = 0;
    for (size_t i = 0; i < n && i < 2; i++) {
        format_metric(json_array_get(specs, i), json_array_get(statuses, i), one, sizeof(one));
        int w = snprintf(out + used, sizeof(out) - used, "%s%s", i ? ", " : "", one);
        if (w > 0 && (size_t)w < sizeof(out) - used)
            used += (size_t)w;
    }
    if (n > 2)
        snprintf(out + used, sizeof(out) - used, " + %zu more...", n - 2);
    return json_string(out);
}

void ck__hpa_cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    char buf[600];
    snprintf(buf, sizeof(buf), "%s/%s", str_or(obj, "spec.scaleTargetRef.kind", ""),
             str_or(obj, "spec.scaleTargetRef.name", ""));
    cells[COL_REFERENCE] = json_string(buf);
    cells[COL_TARGETS] = targets_cell(obj);
    const json_t *min = ck__json_path(obj, "spec.minReplicas");
    if (json_is_integer(min))
        snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(min));
    cells[COL_MINPODS] = json_string(json_is_integer(min) ? buf : "<unset>");
    cells[COL_MAXPODS] = json_integer(ck__int_at(obj, "spec.maxReplicas"));
    cells[COL_REPLICAS] = json_integer(ck__int_at(obj, "status.currentReplicas"));
}

const struct ck_table_column ck__hpa_columns[CK__HPA_COLUMNS] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_REFERENCE] = CK__COMPUTED_COLUMN(
        "Reference", "string",
        "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count.",
        0),
    [COL_TARGETS] = CK__COMPUTED_COLUMN(
        "Targets", "string",
        "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).",
        0),
    [COL_MINPODS] = CK__COMPUTED_COLUMN(
        "MinPods", "string",
        "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.",
        0),
    [COL_MAXPODS] = CK__COMPUTED_COLUMN(
        "MaxPods", "string",
        "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up.",
        0),
    [COL_REPLICAS] = CK__COMPUTED_COLUMN(
        "Replicas", "string",
        "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler.",
        0),
    [COL_AGE] = CK__AGE_COLUMN,
};

/* ---- conversion between v2 and v1 ----------------------------------------- */

/* Moves src[from] to dst[to] when present (a new reference in dst). */
static int move(json_t *dst, const char *to, const json_t *src, const char *from)
{
    json_t *v = json_object_get(src, from);
    return v ? json_object_set(dst, to, v) : 0;
}

/*
 * One v2 MetricSpec (status: MetricStatus) in v1's shape (autoscaling/v1's
 * MetricSpec, the v2beta1 fields): a new reference, NULL when out of memory.
 */
static json_t *metric_to_v1(const json_t *m, bool status)
{
    json_t *out = json_object();
    const char *type = str_or(m, "type", "");
    int failed = json_object_set_new(out, "type", json_string(type));
    for (int i = 0; i < 5; i++) {
        const json_t *src = json_object_get(m, source_members[i]);
        if (!src)
            continue;
        json_t *o = json_object();
        const json_t *t = json_object_get(src, status ? "current" : "target");
        const json_t *metric = json_object_get(src, "metric");
        if (i == 2 || i == 3) { /* resource, containerResource */
            failed |= move(o, "name", src, "name");
            failed |= move(o, "container", src, "container");
            failed |= move(o, status ? "currentAverageUtilization" : "targetAverageUtilization", t,
                           "averageUtilization");
            if (status)
                failed |= json_object_set_new(o, "currentAverageValue",
                                              json_string(str_or(t, "averageValue", "0")));
            else
                failed |= move(o, "targetAverageValue", t, "averageValue");
        } else if (i == 1) { /* pods */
            failed |= move(o, "metricName", metric, "name");
            failed |= move(o, "selector", metric, "selector");
            failed |= json_object_set_new(o, status ? "currentAverageValue" : "targetAverageValue",
                                          json_string(str_or(t, "averageValue", "0")));
        } else if (i == 0) { /* object */
            failed |= move(o, "target", src, "describedObject");
            failed |= move(o, "metricName", metric, "name");
            failed |= move(o, "selector", metric, "selector");
            failed |= json_object_set_new(o, status ? "currentValue" : "targetValue",
                                          json_string(str_or(t, "value", "0")));
            failed |= move(o, "averageValue", t, "averageValue");
        } else { /* external */
            failed |= move(o, "metricName", metric, "name");
            failed |= move(o, "metricSelector", metric, "selector");
            if (status)
                failed |=
                    json_object_set_new(o, "currentValue", json_string(str_or(t, "value", "0")));
            else
                failed |= move(o, "targetValue", t, "value");
            failed |=
                move(o, status ? "currentAverageValue" : "targetAverageValue", t, "averageValue");
        }
        failed |= json_object_set_new(out, source_members[i], o);
    }
    return failed ? (json_decref(out), NULL) : out;
}

/* The reverse of metric_to_v1. */
static json_t *metric_from_v1(const json_t *m, bool status)
{
    json_t *out = json_object();
    int failed = move(out, "type", m, "type");
    for (int i = 0; i < 5; i++) {
        const json_t *src = json_object_get(m, source_members[i]);
        if (!src)
            continue;
        json_t *o = json_object(), *t = json_object(), *metric = json_object();
        const char *cur = status ? "current" : "target";
        if (i == 2 || i == 3) {
            const char *u = status ? "currentAverageUtilization" : "targetAverageUtilization";
            const char *v = status ? "currentAverageValue" : "targetAverageValue";
            failed |= move(o, "name", src, "name");
            failed |= move(o, "container", src, "container");
            if (!status)
                failed |= json_object_set_new(
                    t, "type",
                    json_string(json_object_get(src, u) ? "Utilization" : "AverageValue"));
            failed |= move(t, "averageValue", src, v);
            failed |= move(t, "averageUtilization", src, u);
        } else {
            failed |= move(metric, "name", src, "metricName");
            failed |= move(metric, "selector", src, i == 4 ? "metricSelector" : "selector");
            failed |= json_object_set(o, "metric", metric);
            if (i == 1) {
                if (!status)
                    failed |= json_object_set_new(t, "type", json_string("AverageValue"));
                failed |= move(t, "averageValue", src,
                               status ? "currentAverageValue" : "targetAverageValue");
            } else if (i == 0) {
                failed |= move(o, "describedObject", src, "target");
                if (!status)
                    failed |= json_object_set_new(t, "type",
                                                  json_string(json_object_get(src, "averageValue")
                                                                  ? "AverageValue"
                                                                  : "Value"));
                failed |= move(t, "value", src, status ? "currentValue" : "targetValue");
                failed |= move(t, "averageValue", src, "averageValue");
            } else {
                const char *v = status ? "currentValue" : "targetValue";
                if (!status)
                    failed |= json_object_set_new(
                        t, "type", json_string(json_object_get(src, v) ? "Value" : "AverageValue"));
                failed |= move(t, "value", src, v);
                failed |= move(t, "averageValue", src,
                               status ? "currentAverageValue" : "targetAverageValue");
            }
        }
        failed |= json_object_set(o, cur, t);
        failed |= json_object_set(out, source_members[i], o);
        json_decref(o);
        json_decref(t);
        json_decref(metric);
    }
    return failed ? (json_decref(out), NULL) : out;
}

static bool is_cpu_utilization(const json_t *m, const char *member)
{
    return strcmp(str_or(m, "type", ""), "Resource") == 0 &&
           strcmp(str_or(m, "resource.name", ""), "cpu") == 0 &&
           json_is_integer(ck__json_path(json_object_get(m, "resource"), member));
}

static int set_annotation(json_t *obj, const char *key, json_t *value)
{
    char *text = value ? ck__json_dumps(value, JSON_COMPACT | JSON_PRESERVE_ORDER, NULL) : NULL;
    json_decref(value);
    json_t *ann = text ? ck__object_at(ck__object_at(obj, "metadata"), "annotations") : NULL;
    int r = ann ? json_object_set_new(ann, key, json_string(text)) : -1;
    free(text);
    return r < 0 ? CK_ENOMEM : 0;
}

static void drop_round_trip_annotations(json_t *obj)
{
    static const char *const keys[] = {ANN_METRICS, ANN_CURRENT_METRICS, ANN_CONDITIONS,
                                       ANN_BEHAVIOR};
    json_t *meta = json_object_get(obj, "metadata");
    json_t *ann = json_object_get(meta, "annotations");
    for (size_t i = 0; i < 4; i++)
        json_object_del(ann, keys[i]);
    if (json_is_object(ann) && json_object_size(ann) == 0)
        json_object_del(meta, "annotations");
}

int ck__hpa_v2_to_v1(json_t *obj)
{
    drop_round_trip_annotations(obj);
    int failed = json_object_set_new(obj, "apiVersion", json_string("autoscaling/v1"));
    json_t *spec = json_object_get(obj, "spec");
    json_t *status = json_object_get(obj, "status");
    json_t *metrics = json_incref(json_object_get(spec, "metrics"));
    json_t *current = json_incref(json_object_get(status, "currentMetrics"));
    json_t *conditions = json_incref(json_object_get(status, "conditions"));
    json_t *behavior = json_incref(json_object_get(spec, "behavior"));
    size_t i;
    json_t *m;
    json_t *other = json_array();
    bool cpu_done = false;
    json_array_foreach(metrics, i, m)
    {
        if (!cpu_done && strcmp(str_or(m, "type", ""), "Resource") == 0 &&
            strcmp(str_or(m, "resource.name", ""), "cpu") == 0) {
            cpu_done = true;
            failed |= move(spec, "targetCPUUtilizationPercentage",
                           ck__json_path(m, "resource.target"), "averageUtilization");
        }
        if (!is_cpu_utilization(m, "target.averageUtilization"))
            failed |= json_array_append_new(other, metric_to_v1(m, false));
    }
    json_array_foreach(current, i, m)
    {
        if (is_cpu_utilization(m, "current.averageUtilization"))
            failed |= move(status, "currentCPUUtilizationPercentage",
                           ck__json_path(m, "resource.current"), "averageUtilization");
    }
    if (json_array_size(other))
        failed |= set_annotation(obj, ANN_METRICS, json_incref(other));
    if (json_array_size(current)) {
        json_t *list = json_array();
        json_array_foreach(current, i, m) failed |=
            json_array_append_new(list, metric_to_v1(m, true));
        failed |= set_annotation(obj, ANN_CURRENT_METRICS, list);
    }
    if (json_array_size(conditions))
        failed |= set_annotation(obj, ANN_CONDITIONS, json_incref(conditions));
    if (behavior)
        failed |= set_annotation(obj, ANN_BEHAVIOR, json_incref(behavior));
    json_object_del(spec, "metrics");
    json_object_del(spec, "behavior");
    json_object_del(status, "currentMetrics");
    json_object_del(status, "conditions");
    json_decref(other);
    json_decref(metrics);
    json_decref(current);
    json_decref(conditions);
    json_decref(behavior);
    if (json_is_object(status) && !json_object_get(status, "currentReplicas"))
        failed |= json_object_set_new(status, "currentReplicas", json_integer(0));
    return failed ? CK_ENOMEM : 0;
}

/* The JSON an annotation holds, or NULL (absent or not JSON: Kubernetes fails the decode). */
static json_t *annotation_json(const json_t *obj, const char *key)
{
    const json_t *ann = ck__json_path(obj, "metadata.annotations");
    const char *text = json_string_value(json_object_get(ann, key));
    return text ? json_loads(text, 0, NULL) : NULL;
}

int ck__hpa_v1_to_v2(json_t *obj)
{
    json_t *spec = ck__object_at(obj, "spec");
    json_t *status = json_object_get(obj, "status");
    int failed = json_object_set_new(obj, "apiVersion", json_string("autoscaling/v2")) || !spec;
    json_t *metrics = json_array();
    json_t *other = annotation_json(obj, ANN_METRICS);
    size_t i;
    json_t *m;
    json_array_foreach(other, i, m) failed |=
        json_array_append_new(metrics, metric_from_v1(m, false));
    json_t *cpu = json_object_get(spec, "targetCPUUtilizationPercentage");
    if (json_is_integer(cpu))
        failed |= json_array_append_new(metrics, cpu_metric(json_integer_value(cpu)));
    if (json_array_size(metrics) == 0)
        failed |= json_array_append_new(metrics, cpu_metric(DEFAULT_CPU_UTILIZATION));
    json_object_del(spec, "targetCPUUtilizationPercentage");
    failed |= json_object_set_new(spec, "metrics", metrics);
    json_t *behavior = annotation_json(obj, ANN_BEHAVIOR);
    if (behavior)
        failed |= json_object_set_new(spec, "behavior", behavior);
    if (json_is_object(status)) {
        json_t *cur = json_object_get(status, "currentCPUUtilizationPercentage");
        json_t *current = annotation_json(obj, ANN_CURRENT_METRICS);
        if (current) {
            json_t *list = json_array();
            json_array_foreach(current, i, m) failed |=
                json_array_append_new(list, metric_from_v1(m, true));
            failed |= json_object_set_new(status, "currentMetrics", list);
        } else if (json_is_integer(cur)) {
            failed |= json_object_set_new(
                status, "currentMetrics",
                json_pack("[{s:s,s:{s:s,s:{s:I}}}]", "type", "Resource", "resource", "name", "cpu",
                          "current", "averageUtilization", (json_int_t)json_integer_value(cur)));
        }
        json_decref(current);
        json_object_del(status, "currentCPUUtilizationPercentage");
        if (json_integer_value(json_object_get(status, "currentReplicas")) == 0)
            json_object_del(status, "currentReplicas"); /* v2 omits it when 0 */
        json_t *conditions = annotation_json(obj, ANN_CONDITIONS);
        if (conditions)
            failed |= json_object_set_new(status, "conditions", conditions);
    }
    json_decref(other);
    drop_round_trip_annotations(obj);
    return failed ? CK_ENOMEM : 0;
}

/* ---- the v2 kind ---------------------------------------------------------- */

const char *const ck__hpa_short_names[] = {"hpa", NULL};
const char *const ck__hpa_categories[] = {"all", NULL};

const struct ck_kind ck__kind_horizontalpodautoscaler = {
    CK__HPA_KIND_COMMON,
    .version = "v2",
    .schema = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler",
    .cells = ck__hpa_cells,
    .prepare_for_create = prepare_for_create,
    .defaults = defaults,
    .validate = ck__hpa_validate,
};
