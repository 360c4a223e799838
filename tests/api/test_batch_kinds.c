/*
 * test_batch_kinds.c - the Job, CronJob and ReplicationController kinds
 * (lib/api/kinds/job.c, cronjob.c, replicationcontroller.c): what a create
 * prepares and defaults (a Job's generated selector and labels), validation
 * with Kubernetes' messages, the printed cells kubectl shows and the field
 * labels.
 */
#include "cktest.h"

#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"

#define NOW 1767225700LL /* 2026-01-01T00:01:40Z */

static json_t *load(const char *text)
{
    json_error_t e;
    json_t *obj = json_loads(text, 0, &e);
    if (!obj)
        fail_msg("bad test JSON: %s", e.text);
    return obj;
}

static const char *at(const json_t *obj, const char *a, const char *b, const char *c)
{
    const json_t *v = json_object_get(obj, a);
    if (b)
        v = json_object_get(v, b);
    if (c)
        v = json_object_get(v, c);
    return json_string_value(v);
}

static void expect_error(const struct ck_kind *k, json_t *obj, json_t *old, const char *want)
{
    struct ck_field_errors errs = {0};
    ck_meta_validate(k, obj, old, &errs);
    bool found = false;
    for (size_t i = 0; i < errs.len; i++) {
        char *s = ck_field_error_string(&errs.items[i]);
        if (!want)
            fail_msg("unexpected error: %s", s);
        found = found || strstr(s, want) != NULL;
        free(s);
    }
    if (want && !found)
        fail_msg("no error containing \"%s\" (%zu errors)", want, errs.len);
    ck_field_errors_release(&errs);
}

static json_t *cells_of(const struct ck_kind *k, const json_t *obj)
{
    json_t *cells = json_array();
    assert_int_equal(ck_table_row_cells(k, obj, NOW, cells), 0);
    return cells;
}

static const char *JOB =
    "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"pi\","
    "\"namespace\":\"default\",\"uid\":\"u1\"},\"spec\":{\"template\":{\"spec\":"
    "{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\",\"image\":\"perl\"}]}}}}";

static void test_job_create_generates_selector_and_defaults(void **state)
{
    (void)state;
    const struct ck_kind *k = ck_kind_lookup("batch", "v1", "jobs");
    assert_non_null(k);
    json_t *job = load(JOB);
    assert_int_equal(k->prepare_for_create(job), 0);
    assert_int_equal(k->defaults(job), 0);
    const json_t *labels = json_object_get(
        json_object_get(json_object_get(json_object_get(job, "spec"), "template"), "metadata"),
        "labels");
    assert_string_equal(
        json_string_value(json_object_get(labels, "batch.kubernetes.io/controller-uid")), "u1");
    assert_string_equal(json_string_value(json_object_get(labels, "batch.kubernetes.io/job-name")),
                        "pi");
    assert_string_equal(json_string_value(json_object_get(labels, "controller-uid")), "u1");
    assert_string_equal(json_string_value(json_object_get(labels, "job-name")), "pi");
    assert_string_equal(at(json_object_get(job, "spec"), "selector", "matchLabels",
                           "batch.kubernetes.io/controller-uid"),
                        "u1");
    const json_t *spec = json_object_get(job, "spec");
    assert_int_equal(json_integer_value(json_object_get(spec, "completions")), 1);
    assert_int_equal(json_integer_value(json_object_get(spec, "parallelism")), 1);
    assert_int_equal(json_integer_value(json_object_get(spec, "backoffLimit")), 6);
    assert_string_equal(at(job, "spec", "podReplacementPolicy", NULL), "TerminatingOrFailed");
    assert_string_equal(at(job, "spec", "completionMode", NULL), "NonIndexed");
    expect_error(k, job, NULL, NULL);

    /* a Job with only parallelism keeps completions unset */
    json_t *work_queue = load(JOB);
    json_object_set_new(json_object_get(work_queue, "spec"), "parallelism", json_integer(3));
    assert_int_equal(k->defaults(work_queue), 0);
    assert_null(json_object_get(json_object_get(work_queue, "spec"), "completions"));
    json_decref(work_queue);
    json_decref(job);
}

static void test_job_validation_messages(void **state)
{
    (void)state;
    const struct ck_kind *k = ck_kind_lookup("batch", "v1", "jobs");
    json_t *job = load(JOB);
    k->prepare_for_create(job);
    k->defaults(job);
    json_t *always = json_deep_copy(job);
    json_object_set_new(
        json_object_get(json_object_get(json_object_get(always, "spec"), "template"), "spec"),
        "restartPolicy", json_string("Always"));
    expect_error(k, always, NULL,
                 "spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported "
                 "values: \"OnFailure\", \"Never\"");
    json_t *indexed = json_deep_copy(job);
    json_object_set_new(json_object_get(indexed, "spec"), "completionMode", json_string("Indexed"));
    json_object_del(json_object_get(indexed, "spec"), "completions");
    expect_error(k, indexed, NULL,
                 "spec.completions: Required value: when completion mode is Indexed");
    json_t *changed = json_deep_copy(job);
    json_object_set_new(json_object_get(changed, "spec"), "selector",
                        json_pack("{s:{s:s}}", "matchLabels", "job-name", "pi"));
    expect_error(k, changed, job, "spec.selector: Invalid value: field is immutable");
    json_decref(changed);
    json_decref(indexed);
    json_decref(always);
    json_decref(job);
}

static void test_job_cells_and_field_label(void **state)
{
    (void)state;
    const struct ck_kind *k = ck_kind_lookup("batch", "v1", "jobs");
    json_t *job = load(JOB);
    k->defaults(job);
    json_object_set_new(job, "status",
                        json_pack("{s:i, s:s, s:s, s:[{s:s, s:s}]}", "succeeded", 1, "startTime",
                                  "2026-01-01T00:00:00Z", "completionTime", "2026-01-01T00:00:42Z",
                                  "conditions", "type", "Complete", "status", "True"));
    json_t *cells = cells_of(k, job);
    assert_string_equal(json_string_value(json_array_get(cells, 1)), "Complete");
    assert_string_equal(json_string_value(json_array_get(cells, 2)), "1/1");
    assert_string_equal(json_string_value(json_array_get(cells, 3)), "42s");
    json_decref(cells);
    char buf[32];
    assert_string_equal(ck_kind_field_value(k, "status.successful", job, buf, sizeof(buf)), "1");

    /* no completions, parallelism 3, running for 100 s */
    json_object_del(json_object_get(job, "spec"), "completions");
    json_object_set_new(json_object_get(job, "spec"), "parallelism", json_integer(3));
    json_object_set_new(job, "status", json_pack("{s:s}", "startTime", "2026-01-01T00:00:00Z"));
    cells = cells_of(k, job);
    assert_string_equal(json_string_value(json_array_get(cells, 1)), "Running");
    assert_string_equal(json_string_value(json_array_get(cells, 2)), "0/1 of 3");
    assert_string_equal(json_string_value(json_array_get(cells, 3)), "100s");
    json_decref(cells);
    json_decref(job);
}

static void test_cronjob_cells_and_validation(void **state)
{
    (void)state;
    const struct ck_kind *k = ck_kind_lookup("batch", "v1", "cronjobs");
    assert_non_null(k);
    json_t *cj = load("{\"metadata\":{\"name\":\"hello\",\"namespace\":\"default\"},\"spec\":{"
                      "\"schedule\":\"*/5 * * * *\",\"suspend\":false,\"jobTemplate\":{\"spec\":{"
                      "\"template\":{\"spec\":{\"restartPolicy\":\"OnFailure\",\"containers\":[{"
                      "\"name\":\"c\",\"image\":\"busybox\"}]}}}}},\"status\":{\"active\":[{}],"
                      "\"lastScheduleTime\":\"2026-01-01T00:00:00Z\"}}");
    assert_int_equal(k->defaults(cj), 0);
    expect_error(k, cj, NULL, NULL);
    json_t *cells = cells_of(k, cj);
    assert_string_equal(json_string_value(json_array_get(cells, 1)), "*/5 * * * *");
    assert_string_equal(json_string_value(json_array_get(cells, 2)), "<none>");
    assert_string_equal(json_string_value(json_array_get(cells, 3)), "False");
    assert_int_equal(json_integer_value(json_array_get(cells, 4)), 1);
    assert_string_equal(json_string_value(json_array_get(cells, 5)), "100s");
    json_decref(cells);
    json_object_set_new(json_object_get(cj, "spec"), "timeZone", json_string("Mars/Olympus"));
    expect_error(k, cj, NULL,
                 "spec.timeZone: Invalid value: \"Mars/Olympus\": unknown time zone Mars/Olympus");
    json_object_set_new(json_object_get(cj, "spec"), "timeZone", json_string("Europe/Paris"));
    expect_error(k, cj, NULL, NULL);
    json_object_set_new(json_object_get(cj, "spec"), "schedule",
                        json_string("CRON_TZ=UTC * * * * *"));
    expect_error(k, cj, NULL, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead");
    json_decref(cj);
}

static void test_rc_defaults_selector_and_validates(void **state)
{
    (void)state;
    const struct ck_kind *k = ck_kind_lookup("", "v1", "replicationcontrollers");
    assert_non_null(k);
    json_t *rc = load("{\"metadata\":{\"name\":\"web\",\"namespace\":\"default\"},\"spec\":{"
                      "\"replicas\":2,\"template\":{\"metadata\":{\"labels\":{\"app\":\"web\"}},"
                      "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"nginx\"}]}}}}");
    assert_int_equal(k->defaults(rc), 0);
    assert_string_equal(at(rc, "spec", "selector", "app"), "web");
    assert_string_equal(at(rc, "metadata", "labels", "app"), "web");
    expect_error(k, rc, NULL, NULL);
    json_t *cells = cells_of(k, rc);
    assert_string_equal(json_string_value(json_array_get(cells, 7)), "app=web");
    json_decref(cells);
    json_object_set_new(json_object_get(rc, "spec"), "selector", json_pack("{s:s}", "app", "db"));
    expect_error(
        k, rc, NULL,
        "spec.template.metadata.labels: Invalid value: `selector` does not match template `labels`");
    json_decref(rc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_job_create_generates_selector_and_defaults),
        cmocka_unit_test(test_job_validation_messages),
        cmocka_unit_test(test_job_cells_and_field_label),
        cmocka_unit_test(test_cronjob_cells_and_validation),
        cmocka_unit_test(test_rc_defaults_selector_and_validates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
