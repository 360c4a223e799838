/*
 * job.c - the Job kind (batch/v1).
 *
 * Mirrors Kubernetes' pkg/registry/batch/job/strategy.go, the defaulters of
 * pkg/apis/batch/v1 and pkg/apis/batch/validation:
 *   - create: the server owns status (a create starts from none); unless
 *     spec.manualSelector is true the selector is generated: the template
 *     gets the labels batch.kubernetes.io/controller-uid, batch.kubernetes.io/
 *     job-name and their legacy forms controller-uid and job-name, and the
 *     selector matches batch.kubernetes.io/controller-uid=<uid>;
 *   - defaults: completions and parallelism 1 when both are absent,
 *     parallelism 1, backoffLimit 6 (the int32 maximum with a per-index
 *     limit), podReplacementPolicy Failed with a pod failure policy and
 *     TerminatingOrFailed otherwise, and the pod spec defaults of the template;
 *   - validation: a selector matching the template, restartPolicy OnFailure or
 *     Never, completions required for Indexed, and the fields that never change
 *     (selector, completionMode, the template once the Job has started).
 * The printer computes STATUS, COMPLETIONS and DURATION as kubectl's does;
 * status.successful is the field label Kubernetes offers.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_batch_kinds.c and the Job e2e (tests/e2e/test_jobs.sh).
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "ckube/internal/util.h"

#define LABEL_CONTROLLER_UID  "batch.kubernetes.io/controller-uid"
#define LABEL_JOB_NAME        "batch.kubernetes.io/job-name"
#define LEGACY_CONTROLLER_UID "controller-uid"
#define LEGACY_JOB_NAME       "job-name"
#define INT32_MAX_VALUE       2147483647

enum {
    COL_NAME,
    COL_STATUS,
    COL_COMPLETIONS,
    COL_DURATION,
    COL_AGE,
    COL_CONTAINERS,
    COL_IMAGES,
    COL_SELECTOR,
};

static bool manual_selector(const json_t *spec)
{
    return json_is_true(json_object_get(spec, "manualSelector"));
}

/* Sets key to value in obj unless it has one already. */
static int set_if_absent(json_t *obj, const char *key, json_t *value)
{
    if (json_object_get(obj, key)) {
        json_decref(value);
        return 0;
    }
    return json_object_set_new(obj, key, value) < 0 ? CK_ENOMEM : 0;
}

/* generateSelectorIfNeeded: the labels of the template and the selector over them. */
static int generate_selector(json_t *obj)
{
    json_t *spec = json_object_get(obj, "spec");
    const char *uid = ck__str_at(obj, "metadata.uid");
    const char *name = ck__str_at(obj, "metadata.name");
    if (!json_is_object(spec) || manual_selector(spec) || !uid)
        return 0;
    json_t *template = ck__object_at(spec, "template");
    json_t *tmeta = template ? ck__object_at(template, "metadata") : NULL;
    json_t *labels = tmeta ? ck__object_at(tmeta, "labels") : NULL;
    if (!labels)
        return CK_ENOMEM;
    if (set_if_absent(labels, LEGACY_CONTROLLER_UID, json_string(uid)) < 0 ||
        set_if_absent(labels, LABEL_CONTROLLER_UID, json_string(uid)) < 0 ||
        (name && set_if_absent(labels, LEGACY_JOB_NAME, json_string(name)) < 0) ||
        (name && set_if_absent(labels, LABEL_JOB_NAME, json_string(name)) < 0))
        return CK_ENOMEM;
    return set_if_absent(spec, "selector",
                         json_pack("{s:{s:s}}", "matchLabels", LABEL_CONTROLLER_UID, uid));
}

static int prepare_for_create(json_t *obj)
{
    if (json_object_set_new(obj, "status", json_object()) < 0)
        return CK_ENOMEM;
    return generate_selector(obj);
}

static int defaults(json_t *obj)
{
    json_t *spec = json_object_get(obj, "spec");
    if (!json_is_object(spec))
        return 0;
    if (ck__pod_spec_default(ck__object_at(ck__object_at(spec, "template"), "spec")) < 0)
        return CK_ENOMEM;
    if (!json_object_get(spec, "completions") && !json_object_get(spec, "parallelism") &&
        set_if_absent(spec, "completions", json_integer(1)) < 0)
        return CK_ENOMEM;
    if (set_if_absent(spec, "parallelism", json_integer(1)) < 0)
        return CK_ENOMEM;
    json_int_t backoff = json_object_get(spec, "backoffLimitPerIndex") ? INT32_MAX_VALUE : 6;
    if (set_if_absent(spec, "backoffLimit", json_integer(backoff)) < 0)
        return CK_ENOMEM;
    const char *replacement =
        json_object_get(spec, "podFailurePolicy") ? "Failed" : "TerminatingOrFailed";
    if (set_if_absent(spec, "podReplacementPolicy", json_string(replacement)) < 0)
        return CK_ENOMEM;
    if (set_if_absent(spec, "completionMode", json_string("NonIndexed")) < 0 ||
        set_if_absent(spec, "suspend", json_false()) < 0)
        return CK_ENOMEM;
    return 0;
}

static void validate_selector(const json_t *obj, struct ck_field_errors *errs)
{
    const json_t *selector = ck__json_path(obj, "spec.selector");
    const json_t *template_labels = ck__json_path(obj, "spec.template.metadata.labels");
    struct ck_label_selector *s = NULL;
    struct ck_err err = {0};
    int r = selector ? ck_label_selector_from_object(selector, &s, &err) : 0;
    if (!selector)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.selector", NULL, false, NULL);
    else if (r == CK_ENOMEM)
        errs->nomem = true;
    else if (r < 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.selector", NULL, false, "%s", err.msg);
    else if (ck_label_selector_is_empty(s))
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.selector", NULL, false, NULL);
    else if (!ck_label_selector_matches(s, template_labels))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.template.metadata.labels", NULL, false,
                            "`selector` does not match template `labels`");
    ck_label_selector_free(s);
}

static bool same(const json_t *a, const json_t *b, const char *path)
{
    return json_equal((json_t *)ck__json_path(a, path), (json_t *)ck__json_path(b, path));
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    const json_t *spec = json_object_get(obj, "spec");
    validate_selector(obj, errs);
    const json_t *pod_spec = ck__json_path(obj, "spec.template.spec");
    ck__pod_spec_validate(pod_spec, "spec.template.spec", true, errs);
    const char *restart = json_string_value(json_object_get(pod_spec, "restartPolicy"));
    if (restart && strcmp(restart, "OnFailure") != 0 && strcmp(restart, "Never") != 0)
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, "spec.template.spec.restartPolicy",
                            restart, true, "supported values: \"OnFailure\", \"Never\"");
    const char *mode = json_string_value(json_object_get(spec, "completionMode"));
    if (mode && strcmp(mode, "Indexed") == 0) {
        if (!json_object_get(spec, "completions"))
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.completions", NULL, false,
                                "when completion mode is Indexed");
        else if (ck__int_at(obj, "spec.completions") > 100000)
            ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.completions", NULL, false,
                                "must be less than or equal to 100000 when completion mode "
                                "is Indexed");
    }
    if (json_object_get(spec, "backoffLimitPerIndex") && (!mode || strcmp(mode, "Indexed") != 0))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.backoffLimitPerIndex", NULL, false,
                            "requires indexed completion mode");
    if (!old)
        return;
    if (!same(obj, old, "spec.selector"))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.selector", NULL, false,
                            "field is immutable");
    if (!same(obj, old, "spec.completionMode"))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.completionMode", NULL, false,
                            "field is immutable");
    if (!same(obj, old, "spec.completions") && !(mode && strcmp(mode, "Indexed") == 0))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.completions", NULL, false,
                            "field is immutable");
    /* the template may change only while the Job is suspended and has not started */
    bool may_change_template =
        json_is_true(ck__json_path(old, "spec.suspend")) && !ck__json_path(old, "status.startTime");
    if (!may_change_template && !same(obj, old, "spec.template"))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.template", NULL, false,
                            "field is immutable");
}

static bool has_condition(const json_t *obj, const char *type)
{
    size_t i;
    const json_t *c;
    json_array_foreach(ck__json_path(obj, "status.conditions"), i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *s = json_string_value(json_object_get(c, "status"));
        if (t && s && strcmp(t, type) == 0 && strcmp(s, "True") == 0)
            return true;
    }
    return false;
}

/* printJob's STATUS. */
static const char *status_text(const json_t *obj)
{
    if (has_condition(obj, "Complete"))
        return "Complete";
    if (has_condition(obj, "Failed"))
        return "Failed";
    if (ck__json_path(obj, "metadata.deletionTimestamp"))
        return "Terminating";
    if (has_condition(obj, "Suspended"))
        return "Suspended";
    if (has_condition(obj, "FailureTarget"))
        return "FailureTarget";
    return "Running";
}

static long long seconds_at(const json_t *obj, const char *path)
{
    int64_t t = 0;
    const char *s = ck__str_at(obj, path);
    return s && ck__time_parse(s, &t, NULL) == 0 ? (long long)t : 0;
}

static void cells(const json_t *obj, long long now, json_t **cells)
{
    char buf[64];
    cells[COL_STATUS] = json_string(status_text(obj));
    long long succeeded = ck__int_at(obj, "status.succeeded");
    if (ck__json_path(obj, "spec.completions"))
        snprintf(buf, sizeof(buf), "%lld/%lld", succeeded, ck__int_at(obj, "spec.completions"));
    else if (ck__int_at(obj, "spec.parallelism") > 1)
        snprintf(buf, sizeof(buf), "%lld/1 of %lld", succeeded,
                 ck__int_at(obj, "spec.parallelism"));
    else
        snprintf(buf, sizeof(buf), "%lld/1", succeeded);
    cells[COL_COMPLETIONS] = json_string(buf);
    long long start = seconds_at(obj, "status.startTime");
    long long end = seconds_at(obj, "status.completionTime");
    if (!start)
        cells[COL_DURATION] = json_string("");
    else
        cells[COL_DURATION] =
            json_string(ck_human_duration((end ? end : now) - start, buf, sizeof(buf)));
    ck__workload_wide_cells(obj, cells, COL_CONTAINERS);
}

static const char *field_value(const char *label, const json_t *obj, char *buf, size_t size)
{
    (void)label; /* status.successful, the only one declared without a path */
    snprintf(buf, size, "%lld", ck__int_at(obj, "status.succeeded"));
    return buf;
}

static const char *const categories[] = {"all", NULL};
static const struct ck_field_label field_labels[] = {
    {"status.successful", NULL, CK_FIELD_LABEL_STRING},
};

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_STATUS] = CK__COMPUTED_COLUMN("Status", "string", "Status of the job.", 0),
    [COL_COMPLETIONS] = CK__COMPUTED_COLUMN(
        "Completions", "string", "The completed job pods and the desired completions.", 0),
    [COL_DURATION] =
        CK__COMPUTED_COLUMN("Duration", "string", "Time required to complete the job.", 0),
    [COL_AGE] = CK__AGE_COLUMN,
    [COL_CONTAINERS] = CK__CONTAINERS_COLUMN(1),
    [COL_IMAGES] = CK__IMAGES_COLUMN(1),
    [COL_SELECTOR] = CK__COMPUTED_COLUMN(
        "Selector", "string", "Label query over pods that should match the job count.", 1),
};

const struct ck_kind ck__kind_job = {
    .group = "batch",
    .version = "v1",
    .kind = "Job",
    .list_kind = "JobList",
    .resource = "jobs",
    .singular = "job",
    .categories = categories,
    .namespaced = true,
    .has_generation = true,
    .schema = "io.k8s.api.batch.v1.Job",
    CK__KIND_SUBRESOURCES(ck__status_subresource),
    .status_keeps_metadata = ck__status_keeps_labels,
    CK__KIND_FIELD_LABELS(field_labels),
    .field_value = field_value,
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .prepare_for_create = prepare_for_create,
    .defaults = defaults,
    .validate = validate,
};
