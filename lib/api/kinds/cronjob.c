/*
 * cronjob.c - the CronJob kind (batch/v1).
 *
 * Mirrors Kubernetes' pkg/registry/batch/cronjob/strategy.go and
 * pkg/apis/batch/validation (ValidateCronJobCreate/Update): the server owns
 * status (a create starts from none); a name of at most 52 characters (the
 * Job names it makes append 11); a schedule that is not empty and carries no
 * TZ= or CRON_TZ= (spec.timeZone says the zone); a timeZone that names a zone
 * of the system's zone database; the Job template's pod spec defaults and its
 * restartPolicy OnFailure or Never. The schedule's syntax itself is checked
 * by the CronJob controller, which records an UnparseableSchedule event.
 * The printer follows kubectl's columns: SCHEDULE, TIMEZONE, SUSPEND, ACTIVE,
 * LAST SCHEDULE.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_batch_kinds.c.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../internal.h"
#include "ckube/internal/util.h"

#define CRONJOB_NAME_MAX 52

enum {
    COL_NAME,
    COL_SCHEDULE,
    COL_TIMEZONE,
    COL_SUSPEND,
    COL_ACTIVE,
    COL_LAST_SCHEDULE,
    COL_AGE,
    COL_CONTAINERS,
    COL_IMAGES,
    COL_SELECTOR,
};

static int prepare_for_create(json_t *obj)
{
    return json_object_set_new(obj, "status", json_object()) < 0 ? CK_ENOMEM : 0;
}

static int defaults(json_t *obj)
{
    json_t *spec = json_object_get(obj, "spec");
    if (!json_is_object(spec))
        return 0;
    json_t *job_spec = ck__object_at(ck__object_at(spec, "jobTemplate"), "spec");
    json_t *pod_spec = ck__object_at(ck__object_at(job_spec, "template"), "spec");
    return pod_spec ? ck__pod_spec_default(pod_spec) : CK_ENOMEM;
}

/* A zone name the system's zone database knows (time.LoadLocation). */
static bool known_zone(const char *zone)
{
    if (!*zone || zone[0] == '/' || strstr(zone, ".."))
        return false;
    if (strcmp(zone, "UTC") == 0 || strcmp(zone, "Local") == 0)
        return true;
    char path[512];
    snprintf(path, sizeof(path), "/usr/share/zoneinfo/%s", zone);
    return access(path, R_OK) == 0;
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    (void)old;
    const char *name = ck__str_at(obj, "metadata.name");
    if (name && strlen(name) > CRONJOB_NAME_MAX)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "metadata.name", name, true,
                            "must be no more than 52 characters");
    const char *schedule = ck__str_at(obj, "spec.schedule");
    if (schedule && !*schedule)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.schedule", NULL, false, NULL);
    else if (schedule && (strstr(schedule, "TZ=")))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.schedule", schedule, true,
                            "cannot use TZ or CRON_TZ in schedule, use timeZone field instead");
    const char *zone = ck__str_at(obj, "spec.timeZone");
    if (zone && !known_zone(zone))
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.timeZone", zone, true,
                            "unknown time zone %s", zone);
    const json_t *pod_spec = ck__json_path(obj, "spec.jobTemplate.spec.template.spec");
    ck__pod_spec_validate(pod_spec, "spec.jobTemplate.spec.template.spec", true, errs);
    const char *restart = json_string_value(json_object_get(pod_spec, "restartPolicy"));
    if (restart && strcmp(restart, "OnFailure") != 0 && strcmp(restart, "Never") != 0)
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED,
                            "spec.jobTemplate.spec.template.spec.restartPolicy", restart, true,
                            "supported values: \"OnFailure\", \"Never\"");
}

static void cells(const json_t *obj, long long now, json_t **cells)
{
    char buf[64];
    const char *zone = ck__str_at(obj, "spec.timeZone");
    cells[COL_TIMEZONE] = json_string(zone ? zone : "<none>");
    const json_t *suspend = ck__json_path(obj, "spec.suspend");
    cells[COL_SUSPEND] = json_string(!suspend                ? "<unset>"
                                     : json_is_true(suspend) ? "True"
                                                             : "False");
    cells[COL_ACTIVE] =
        json_integer((json_int_t)json_array_size(ck__json_path(obj, "status.active")));
    int64_t t = 0;
    const char *last = ck__str_at(obj, "status.lastScheduleTime");
    if (last && ck__time_parse(last, &t, NULL) == 0)
        cells[COL_LAST_SCHEDULE] =
            json_string(ck_human_duration(now - (long long)t, buf, sizeof(buf)));
    else
        cells[COL_LAST_SCHEDULE] = json_string("<none>");
    /* the wide cells read the Job template */
    json_t *view = json_pack("{s:O?}", "spec", ck__json_path(obj, "spec.jobTemplate.spec"));
    if (view)
        ck__workload_wide_cells(view, cells, COL_CONTAINERS);
    json_decref(view);
}

static const char *const short_names[] = {"cj", NULL};
static const char *const categories[] = {"all", NULL};
static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_SCHEDULE] = {"Schedule", "string", "", "The schedule in Cron format.", 0, ".spec.schedule",
                      CK_CELL_ABSENT_EMPTY, false},
    [COL_TIMEZONE] =
        CK__COMPUTED_COLUMN("Timezone", "string", "The time zone name for the given schedule.", 0),
    [COL_SUSPEND] =
        CK__COMPUTED_COLUMN("Suspend", "boolean",
                            "This flag tells the controller to suspend subsequent executions.", 0),
    [COL_ACTIVE] = CK__COMPUTED_COLUMN("Active", "integer",
                                       "A list of pointers to currently running jobs.", 0),
    [COL_LAST_SCHEDULE] = CK__COMPUTED_COLUMN(
        "Last Schedule", "string",
        "Information when was the last time the job was successfully scheduled.", 0),
    [COL_AGE] = CK__AGE_COLUMN,
    [COL_CONTAINERS] = CK__CONTAINERS_COLUMN(1),
    [COL_IMAGES] = CK__IMAGES_COLUMN(1),
    [COL_SELECTOR] = CK__COMPUTED_COLUMN(
        "Selector", "string", "Label query over pods that should match the job count.", 1),
};

const struct ck_kind ck__kind_cronjob = {
    .group = "batch",
    .version = "v1",
    .kind = "CronJob",
    .list_kind = "CronJobList",
    .resource = "cronjobs",
    .singular = "cronjob",
    .short_names = short_names,
    .categories = categories,
    .namespaced = true,
    .has_generation = true,
    .schema = "io.k8s.api.batch.v1.CronJob",
    CK__KIND_SUBRESOURCES(ck__status_subresource),
    .status_keeps_metadata = ck__status_keeps_labels,
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .prepare_for_create = prepare_for_create,
    .defaults = defaults,
    .validate = validate,
};
